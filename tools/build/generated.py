"""No generator overwrites a file someone edited: the one rule, for every tool that writes files.

``make sync`` (``notebooks/``, ``notebooks/zh/``, the code cells of ``book/zh/``) and ``make
student`` (``student/``) write through :class:`Generated`. A file that exists is replaced only
when what matters of it (its whole text; for a Chinese page, its code cells) is

- what a generator last wrote there (recorded in the manifest, ``.generated.json``, not under
  version control),
- what git has for it at ``HEAD`` (nothing is lost: git keeps it), or
- what the generator would write now (then nothing is written: no new mtime for Sphinx).

Otherwise it was changed by hand (a learner saved work in ``notebooks/``, a translator edited
a code cell): it stays exactly as it is, and the tool reports it with the command that
discards the change on purpose (``REPLACE=path``). book/README.md ("Generated files") says
which folders are generated.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tools.build.chapter_format import ROOT

MANIFEST = ROOT / ".generated.json"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def whole(text: str) -> str:
    """The part of a generated file that a person's edit must not lose: all of it."""
    return text


def text_at_head(path: Path, root: Path = ROOT) -> str | None:
    """``path`` as committed at git's HEAD, or None (no git, not tracked, not a repository)."""
    try:
        rel = path.resolve().relative_to(root.resolve())
        result = subprocess.run(["git", "-C", str(root), "show", f"HEAD:{rel.as_posix()}"],
                                capture_output=True, timeout=30)
    except (ValueError, OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.decode("utf-8", "replace") if result.returncode == 0 else None


@dataclass
class Generated:
    """What one run of a generator wrote and kept; the manifest is saved by :meth:`save`.

    ``command`` is how the generator is run (``make sync``), for the message about a kept
    file; ``replace`` names files to overwrite even if edited (the ``REPLACE=`` of make).
    """

    command: str
    manifest: Path = MANIFEST
    root: Path = ROOT
    replace: Iterable[Path] = ()
    written: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._replace = {Path(p).resolve() for p in self.replace}
        self._changed: dict[str, str] = {}
        try:
            self._records = json.loads(self.manifest.read_text(encoding="utf-8"))
            if not isinstance(self._records, dict):
                raise ValueError("not a JSON object")
        except FileNotFoundError:
            self._records = {}
        except ValueError as err:  # a damaged manifest: trust git and content only
            print(f"note: {self.manifest.name} unreadable ({err}); starting it afresh")
            self._records = {}

    def _key(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(path.resolve())

    def name(self, path: Path) -> str:
        return self._key(path)

    def may_replace(self, path: Path, current: str, new: str,
                    part: Callable[[str], str] = whole) -> bool:
        """True when ``path`` (now holding ``current``) holds nothing a person wrote."""
        mine = sha(part(current))
        if path.resolve() in self._replace or mine == sha(part(new)):
            return True
        if self._records.get(self._key(path)) == mine:
            return True
        committed = text_at_head(path, self.root)
        return committed is not None and sha(part(committed)) == mine

    def write(self, path: Path, new: str, part: Callable[[str], str] = whole) -> str:
        """Write ``new`` to ``path`` unless a person's edit is there: "wrote", "unchanged"
        (the file already holds ``new``) or "kept" (edited by hand: left as it is)."""
        if path.is_dir():
            raise IsADirectoryError(f"{self.name(path)} is a folder; the generator writes a "
                                    "file there: move the folder away")
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == new:
            outcome = "unchanged"
        elif current is None or self.may_replace(path, current, new, part):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new, encoding="utf-8")
            self.written.append(path)
            outcome = "wrote"
        else:
            self.kept.append(path)
            print(f"kept {self.name(path)}: changed by hand since {self.command} wrote it, so "
                  f"it was not replaced. To discard your changes and get the book's version: "
                  f"{self.command} REPLACE={self.name(path)}")
            return "kept"
        self._records[self._key(path)] = self._changed[self._key(path)] = sha(part(new))
        return outcome

    def save(self) -> None:
        """Record what this run wrote, merged into what the manifest holds now (another
        generator may have saved since this one read it)."""
        try:
            records = json.loads(self.manifest.read_text(encoding="utf-8"))
            records = records if isinstance(records, dict) else {}
        except (OSError, ValueError):
            records = {}
        records.update(self._changed)
        try:
            self.manifest.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n",
                                     encoding="utf-8")
        except OSError as err:
            print(f"note: could not record what was generated in {self.manifest}: {err}")
