"""``make lab``: JupyterLab on a learner's own copies of the chapters, which no command overwrites.

The workspace (``workspace/``; ``workspace/zh/`` for ``BOOK_LANG=zh``, ``workspace/student/``
and ``workspace/student/zh/`` for ``EDITION=student``) is not under version control and not
removed by ``make clean``. The first ``make lab`` copies every chapter into it; after that a
copy is never written again. When the book's version of a chapter changed since the copy was
made, ``make lab`` says so and writes the new version beside the learner's, as
``NN_topic.book-<version>.ipynb``. JupyterLab listens on 127.0.0.1 only, on the first free port
from 8888, with a token; a second ``make lab`` on the same workspace says where the first runs.
README ("Learn locally") is the learner's guide to it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tools.build.chapter_format import BOOK, ROOT, ZH, chapters, ipynb_from_myst, student_text
from tools.build.zh import edition as zh_edition

WORKSPACE = ROOT / "workspace"
VERSIONS = ".book-versions.json"  # chapter -> the book version its copy was made from
RUNNING = ".lab.json"  # pid and URL of the JupyterLab serving this workspace
LOG = ".lab.log"  # what that JupyterLab printed
FIRST_PORT = 8888


class WorkspaceError(Exception):
    """The workspace cannot be used as it is; the message says what to do."""


def workspace_for(lang: str = "en", edition: str = "book", base: Path = WORKSPACE) -> Path:
    if lang not in ("en", ZH) or edition not in ("book", "student"):
        raise WorkspaceError(f"BOOK_LANG is en or zh and EDITION book or student, not "
                             f"{lang!r} / {edition!r}")
    folder = base / "student" if edition == "student" else base
    return folder / ZH if lang == ZH else folder


def book_versions(lang: str = "en", edition: str = "book",
                  book: Path = BOOK) -> dict[str, str]:
    """``NN_topic.ipynb`` -> the notebook text the book has now, made from ``book/`` (not read
    from ``notebooks/``, where a person's edit may have been kept)."""
    pages = chapters(book / ZH if lang == ZH else book)
    made = {}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        if edition == "student":
            text = student_text(text, language=ZH if lang == ZH else "en")
        made[page.with_suffix(".ipynb").name] = (
            zh_edition.notebook_text(text, page.stem) if lang == ZH
            else ipynb_from_myst(text, stem=page.stem))
    return made


def version_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


@dataclass
class Refresh:
    copied: list[str]
    newer: list[tuple[str, str]]  # (the learner's copy, the book's newer version beside it)
    unreadable: list[str]


def fill_workspace(folder: Path, versions: dict[str, str]) -> Refresh:
    """Copy each chapter the workspace lacks; beside a copy whose book version changed, write
    the new version. Never writes over a file that exists."""
    if folder.exists() and not folder.is_dir():
        raise WorkspaceError(f"{folder} is a file, not a folder: move it away (nothing was "
                             "changed)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        raise WorkspaceError(f"cannot write in {folder} ({err.strerror}): make it writable, or "
                             "pass another folder (make lab WORKSPACE=...)") from err
    record_path = folder / VERSIONS
    try:
        records = json.loads(record_path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        records = {}
    refresh = Refresh([], [], [])
    for name, text in versions.items():
        copy, version = folder / name, version_of(text)
        if not copy.exists():
            copy.write_text(text, encoding="utf-8")
            records[name] = version
            refresh.copied.append(name)
        elif records.get(name) != version:
            beside = copy.with_name(f"{copy.stem}.book-{version}.ipynb")
            if not beside.exists():
                beside.write_text(text, encoding="utf-8")
            refresh.newer.append((name, beside.name))
    for notebook in sorted(folder.glob("*.ipynb")):
        try:
            json.loads(notebook.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as err:
            refresh.unreadable.append(f"{notebook.name} ({err.__class__.__name__}: {err})")
    record_path.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n",
                           encoding="utf-8")
    return refresh


def report(refresh: Refresh, folder: Path) -> list[str]:
    lines = []
    if refresh.copied:
        lines.append(f"copied {len(refresh.copied)} chapter(s) into {folder}: "
                     + ", ".join(refresh.copied))
    for mine, beside in refresh.newer:
        lines.append(f"the book's {mine} changed since your copy was made: your copy is as "
                     f"you left it; the new version is beside it as {beside}")
    for bad in refresh.unreadable:
        lines.append(f"note: {bad} is not a readable notebook (left as it is; JupyterLab "
                     "will not open it)")
    return lines


def edition_lines(lang: str, edition: str) -> list[str]:
    """What the first screen says about the edition open, and how to open the others."""
    names = {("book", "en"): "the book edition in English (solutions folded under each "
                             "exercise)",
             ("student", "en"): "the student edition in English (exercises without solutions; "
                                "make grade grades them)",
             ("book", ZH): "the book edition in Chinese, 中文版 (solutions folded)",
             ("student", ZH): "the student edition in Chinese, 中文版 (no solutions)"}
    others = [f"{names[(e, lang_)].split(' (')[0]}: make lab"
              + (f" BOOK_LANG={lang_}" if lang_ == ZH else "")
              + (f" EDITION={e}" if e == "student" else "")
              for e, lang_ in names if (e, lang_) != (edition, lang)]
    return [f"  open:  {names[(edition, lang)]}"] + [f"  other: {o}" for o in others]


def free_port(start: int = FIRST_PORT, host: str = "127.0.0.1", tries: int = 100) -> int:
    """The first port from ``start`` that nothing listens on."""
    for port in range(start, start + tries):
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    raise WorkspaceError(f"no free port in {start}..{start + tries - 1}")


def already_running(folder: Path) -> dict | None:
    """The record of a JupyterLab that serves ``folder`` and is still alive, else None."""
    try:
        record = json.loads((folder / RUNNING).read_text(encoding="utf-8"))
        os.kill(int(record["pid"]), 0)
        with socket.create_connection(("127.0.0.1", int(record["port"])), timeout=1):
            return record
    except (FileNotFoundError, ValueError, KeyError, TypeError, OSError):
        return None


def lab_command(folder: Path, port: int, token: str, expose_app: bool = False) -> list[str]:
    """JupyterLab on localhost only, on ``folder``, asking nothing of the network."""
    command = [sys.executable, "-m", "jupyterlab", "--no-browser",
               "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
               "--ServerApp.port_retries=0", f"--ServerApp.root_dir={folder}",
               f"--IdentityProvider.token={token}",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               "--LabApp.extension_manager=readonly",
               # overrides.json there: no "get Jupyter news?" prompt, no update check
               f"--LabApp.app_settings_dir={ROOT / 'tools' / 'teach' / 'lab-settings'}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # a container's root (CI, this machine)
        command.append("--ServerApp.allow_root=True")
    return command + (["--LabApp.expose_app_in_browser=True"] if expose_app else [])


@dataclass
class Lab:
    process: subprocess.Popen
    url: str
    port: int


def start(folder: Path, port: int | None = None, expose_app: bool = False,
          wait_s: float = 60) -> Lab:
    """Start JupyterLab on ``folder`` and wait until it answers; the caller stops it."""
    running = already_running(folder)
    if running:
        raise WorkspaceError(f"JupyterLab is already running for {folder} (pid "
                             f"{running['pid']}): {running['url']}  (stop it with Ctrl-C in "
                             f"its terminal, or kill {running['pid']})")
    port = port or free_port()
    token = secrets.token_hex(24)
    log = folder / LOG
    with log.open("wb") as sink:  # a file, not a pipe: JupyterLab logs every request
        process = subprocess.Popen(lab_command(folder, port, token, expose_app), cwd=folder,
                                   stdout=sink, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/lab?token={token}"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise WorkspaceError("JupyterLab stopped at start; the end of its log:\n"
                                 + log.read_text(errors="replace")[-2000:])
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.3)
    else:
        process.kill()
        raise WorkspaceError(f"JupyterLab did not answer on port {port} within {wait_s:.0f} s")
    (folder / RUNNING).write_text(json.dumps({"pid": process.pid, "port": port, "url": url}),
                                  encoding="utf-8")
    return Lab(process, url, port)


def stop(lab: Lab, folder: Path) -> None:
    lab.process.terminate()
    try:
        lab.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        lab.process.kill()
    (folder / RUNNING).unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", default=os.environ.get("BOOK_LANG") or "en")
    parser.add_argument("--edition", default=os.environ.get("EDITION") or "book")
    parser.add_argument("--workspace", type=Path, default=WORKSPACE)
    parser.add_argument("--prepare-only", action="store_true",
                        help="fill the workspace, do not start JupyterLab")
    args = parser.parse_args(argv)
    try:
        folder = workspace_for(args.lang, args.edition, args.workspace)
        refresh = fill_workspace(folder, book_versions(args.lang, args.edition))
        for line in report(refresh, folder):
            print(line)
        if args.prepare_only:
            return 0
        lab = start(folder)
    except WorkspaceError as err:
        print(f"make lab: {err}", file=sys.stderr)
        return 2
    shown = folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder
    print(f"\nJupyterLab serves {folder} (your copies: no make target overwrites them)\n"
          + "\n".join(edition_lines(args.lang, args.edition)) + "\n"
          f"  open   {lab.url}\n"
          f"  grade  make grade NB={shown}/01_autograd.ipynb\n"
          f"  log    {folder / LOG}\n"
          f"  stop   Ctrl-C here\n",
          flush=True)
    def interrupted(signum, frame):  # `kill` or a closed terminal: stop JupyterLab too
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, interrupted)
    try:
        while lab.process.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        stop(lab, folder)
        print("JupyterLab stopped; your notebooks are in", folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
