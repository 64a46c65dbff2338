"""Run every chapter the way a learner on Colab runs it (``make colab-check``).

On Colab a chapter runs in Google's environment, not the book's: its own torch, a set of
preinstalled packages, and the helpers installed by the chapter's first cell from the
repository. This check reproduces that here:

1. the helpers are built as a wheel (``pip wheel .``, not an editable install);
2. a fresh venv gets only what Colab preinstalls (``COLAB_PREINSTALLED``; not jupyter-book,
   jupytext, nbmake or torchao), then the wheel with its declared dependencies;
3. each notebook is copied **alone** into an empty folder and executed there by
   ``jupyter execute`` with a kernel from that venv, an empty ``HOME``, no path into
   the repository, and the network cut (a network namespace, where this runs as root).

A chapter that reads a repository file, or imports a package only the book's venv has,
fails here. The venv is kept between runs (``--venv``); ``--torch`` picks Colab's torch.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from tools.teach.grade_class import network_isolation

ROOT = Path(__file__).resolve().parents[2]
# What a fresh Colab runtime has that the chapters use (Colab preinstalls far more); the
# chapters' imports beyond these must come with the helpers (tests/helpers/test_dependencies.py).
COLAB_PREINSTALLED = ("torch", "torchvision", "numpy", "matplotlib", "scikit-learn", "pandas",
                      "tqdm", "tensorboard", "psutil", "ipywidgets", "ipykernel", "pillow")
DEFAULT_TORCH = ("torch==2.14.1", "torchvision==0.29.1")  # as requirements.txt pins them
KEPT = ("torch", "torchvision")  # what the install line may not move
COLAB_IF = 'if "google.colab" in sys.modules:'
REPO_REQUIREMENT_RE = re.compile(r"pytorch-book-helpers @ git\+[^\"]*")


def pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "-q", *args], check=True)


def build_wheel(out: Path) -> Path:
    """The helpers as a wheel, as pip would build it from the repository on Colab (from a copy
    of what the package is made of: setuptools would leave a build/ folder in the checkout)."""
    source = out / "source"
    shutil.copytree(ROOT / "src", source / "src",
                    ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", source / "pyproject.toml")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
                    str(source)], check=True)
    (wheel,) = out.glob("pytorch_book_helpers-*.whl")
    return wheel


def prepare_venv(venv: Path, torch: tuple[str, ...], wheel: Path) -> Path:
    """A venv with Colab's preinstalled set, then the helpers wheel; returns its python."""
    python = venv / "bin" / "python"
    stamp = venv / ".colab-check.json"
    wanted = {"torch": list(torch), "preinstalled": list(COLAB_PREINSTALLED)}
    if not (stamp.exists() and json.loads(stamp.read_text()) == wanted):
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip(python, "--upgrade", "pip")
        pins = venv / "torch-pins.txt"  # nothing installed later may move Colab's torch
        pins.write_text("\n".join(torch) + "\n")
        pip(python, *torch)
        others = [p for p in COLAB_PREINSTALLED if p not in ("torch", "torchvision")]
        pip(python, "-c", str(pins), *others)
        stamp.write_text(json.dumps(wanted))
    # no helpers yet: the chapters' own install line puts them in (check_install_line)
    subprocess.run([str(python), "-m", "pip", "uninstall", "-q", "-y", "pytorch-book-helpers"],
                   check=True)
    return python


def install_block(notebook: Path) -> str:
    """The Colab-only block of a chapter's setup cell (``if "google.colab" in sys.modules:``),
    its body dedented: what runs on Colab before the chapter imports anything."""
    setup = next(c for c in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
                 if c["cell_type"] == "code")
    lines = "".join(setup["source"]).splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(COLAB_IF)), None)
    if start is None:
        raise ValueError(f"{notebook.name}: the setup cell has no `{COLAB_IF}` block")
    body = []
    for line in lines[start + 1:]:
        if line and not line.startswith(" "):
            break
        body.append(line)
    return textwrap.dedent("\n".join(body)).strip() + "\n"


def versions(python: Path, names: tuple[str, ...] = KEPT + ("pytorch-book-helpers",)) -> dict:
    """name -> installed version (None when not installed) in the venv of ``python``."""
    code = ("import json, sys\nfrom importlib.metadata import version, PackageNotFoundError\n"
            "def v(n):\n    try:\n        return version(n)\n    except PackageNotFoundError:\n"
            "        return None\nprint(json.dumps({n: v(n) for n in sys.argv[1:]}))")
    out = subprocess.run([str(python), "-c", code, *names], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def check_install_line(python: Path, block: str, wheel: Path) -> list[str]:
    """Run a chapter's Colab block as Colab does (IPython, so ``%pip`` and its ``{...}``
    expansion are real), the repository URL pointed at the local wheel; what went wrong:
    torch or torchvision moved, or the helpers were not installed."""
    local = REPO_REQUIREMENT_RE.sub(f"pytorch-book-helpers @ {wheel.resolve().as_uri()}", block)
    if local == block:
        raise ValueError("the Colab block installs no `pytorch-book-helpers @ git+...`")
    before = versions(python)
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "colab_block.ipy"
        script.write_text(local, encoding="utf-8")
        result = subprocess.run([str(python), "-m", "IPython", "--quick", "--no-banner",
                                 str(script)], capture_output=True, text=True)
    after = versions(python)
    return moved(before, after) + ([] if after.get("pytorch-book-helpers") else [
        "the install line did not install the helpers:\n" + (result.stdout + result.stderr)
        .strip()[-1500:]])


def moved(before: dict, after: dict) -> list[str]:
    """The kept packages (Colab's torch and torchvision) whose version changed."""
    return [f"{name} moved from {before.get(name)} to {after.get(name)}" for name in KEPT
            if before.get(name) != after.get(name)]


def kernel_spec(python: Path, into: Path) -> str:
    """A Jupyter kernel running ``python``, written under ``into`` (for JUPYTER_PATH)."""
    name = "colab-check"
    folder = into / "kernels" / name
    folder.mkdir(parents=True)
    (folder / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Colab-like", "language": "python"}))
    return name


def run_alone(notebook: Path, python: Path, timeout: int) -> tuple[bool, float, str]:
    """Execute ``notebook`` alone in an empty folder; (passed, seconds, last error lines)."""
    with tempfile.TemporaryDirectory(prefix="colab-") as tmp:
        work = Path(tmp) / "content"  # Colab's working folder is /content
        work.mkdir()
        shutil.copy(notebook, work / notebook.name)
        kernel = kernel_spec(python, Path(tmp) / "jupyter")
        home, scratch = Path(tmp) / "home", Path(tmp) / "tmp"  # as on Colab: not in /content
        home.mkdir()
        scratch.mkdir()
        env = {"PATH": f"{python.parent}{os.pathsep}/usr/bin:/bin", "HOME": str(home),
               "TMPDIR": str(scratch), "JUPYTER_PATH": str(Path(tmp) / "jupyter"),
               "LANG": os.environ.get("LANG", "C.UTF-8")}
        command = [*(network_isolation() or []), str(ROOT / ".venv" / "bin" / "jupyter-execute"),
                   f"--kernel_name={kernel}", f"--timeout={timeout}", notebook.name]
        start = time.perf_counter()
        result = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-6:])
    return result.returncode == 0, seconds, tail


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv-colab")
    parser.add_argument("--torch", nargs="+", default=list(DEFAULT_TORCH),
                        help="Colab's torch and torchvision, as pip requirements")
    parser.add_argument("--timeout", type=int, default=600)
    args = parser.parse_args()
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb"))
    with tempfile.TemporaryDirectory() as tmp:
        wheel = build_wheel(Path(tmp))
        python = prepare_venv(args.venv, tuple(args.torch), wheel)
        blocks: dict[str, str] = {}  # block -> the first chapter that has it
        for notebook in notebooks:
            blocks.setdefault(install_block(notebook), notebook.stem)
        kept = versions(python)
        print(f"Colab-like venv: torch {kept['torch']}, torchvision {kept['torchvision']}, "
              "no helpers; running the chapters' install line")
        for block, first in blocks.items():  # the same line in every chapter: run it once
            problems = check_install_line(python, block, wheel)
            now = versions(python)
            print(f"  install line of {first} (and {len(notebooks) - 1} more alike)"
                  if len(blocks) == 1 else f"  install line of {first}",
                  f"-> torch {now['torch']}, torchvision {now['torchvision']}, helpers "
                  f"{now['pytorch-book-helpers']}")
            if problems:
                print("    FAILED: " + "\n    ".join(problems))
                return 1
        print(f"  torch and torchvision unchanged by the install line: "
              f"{moved(kept, versions(python)) == []}")
    version = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    isolation = "network cut" if network_isolation() else "network NOT cut (needs root)"
    print(f"Colab-like check: torch {version}, each notebook alone, {isolation}")
    failed = []
    for notebook in notebooks:
        ok, seconds, tail = run_alone(notebook, python, args.timeout)
        print(f"  {notebook.stem:<24} {'passed' if ok else 'FAILED'} {seconds:6.1f} s")
        if not ok:
            failed.append(notebook.stem)
            print("    " + tail.replace("\n", "\n    "))
    print(f"Colab-like check: {len(notebooks) - len(failed)} of {len(notebooks)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
