"""What ``make sync`` made from inputs that have not changed since, so it is not made again.

Converting a page (jupytext and markdown-it parse it) is most of ``make sync``'s time, and
``make book`` runs ``make sync`` after every edit (issue 46: the edit loop). A page is skipped
when its inputs are byte for byte what they were when ``make sync`` last wrote or confirmed its
outputs, and each output still holds exactly what was written then. The inputs of a page are
its text and the texts it takes code or anchors from (the caller names them) plus everything a
conversion reads whatever the page: the code of ``tools/build`` (its ``zh`` package too) and
``helpers/exercises.py``, ``_config.yml``, ``notebooks/book-run.json`` and the versions of the
parsers. Anything else changed means the page is converted again.

The memo (``_build/sync-memo.json``) only saves time: deleting it makes the next sync convert
every page, as a fresh clone's does. ``make sync``'s ``--check`` never uses it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from tools.build.chapter_format import ROOT
from tools.build.generated import sha

MEMO = ROOT / "_build" / "sync-memo.json"
PARSERS = ("jupytext", "markdown-it-py", "myst-parser", "nbformat", "mdit-py-plugins")


def _sha(*parts: str) -> str:
    return sha("\0".join(parts))


def text_or_none(path: Path) -> str:
    """A file's text as an input of a conversion; ``"(none)"`` for a file that is not there."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "(none)"


def conversion_inputs(root: Path = ROOT) -> str:
    """A digest of what every page's conversion reads besides the page itself."""
    sources = sorted((root / "tools" / "build").rglob("*.py"))
    sources += [root / "src" / "helpers" / "exercises.py", root / "_config.yml",
                root / "notebooks" / "book-run.json"]
    parts = [f"{p.relative_to(root).as_posix()}\n{text_or_none(p)}" for p in sources]
    for name in PARSERS:
        try:
            parts.append(f"{name}=={version(name)}")
        except PackageNotFoundError:
            parts.append(f"{name} not installed")
    return _sha(*parts)


class SyncMemo:
    """Which inputs gave which outputs at the last ``make sync`` (see the module's docstring).

    ``common`` is the digest of what every conversion reads (:func:`conversion_inputs`)."""

    def __init__(self, path: Path = MEMO, common: str | None = None) -> None:
        self.path = path
        self.common = conversion_inputs() if common is None else common
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            valid = isinstance(stored, dict) and stored.get("common") == self.common
            self._pages: dict[str, dict[str, str]] = stored.get("pages", {}) if valid else {}
        except (OSError, ValueError, AttributeError):
            self._pages = {}
        self._changed = False

    def _key(self, inputs: Iterable[str]) -> str:
        return _sha(self.common, *inputs)

    def unchanged(self, inputs: Iterable[str], outputs: Iterable[Path]) -> bool:
        """True when ``inputs`` are those of a recorded conversion and every one of ``outputs``
        still holds what it held when that conversion was recorded."""
        recorded = self._pages.get(self._key(inputs))
        if recorded is None:
            return False
        outputs = list(outputs)
        if sorted(str(p) for p in outputs) != sorted(recorded):
            return False
        return all(p.is_file() and sha(p.read_text(encoding="utf-8")) == recorded[str(p)]
                   for p in outputs)

    def record(self, inputs: Iterable[str], outputs: Iterable[Path]) -> None:
        """Remember that ``inputs`` gave what ``outputs`` hold now (call after writing them)."""
        self._pages[self._key(inputs)] = {str(p): sha(p.read_text(encoding="utf-8"))
                                          for p in outputs}
        self._changed = True

    def save(self) -> None:
        """Write the memo, keeping only the conversions of this run's inputs and earlier ones
        whose outputs are still as recorded (so it does not grow with every edit)."""
        if not self._changed:
            return
        kept = {key: outputs for key, outputs in self._pages.items()
                if all(Path(p).is_file() and sha(Path(p).read_text(encoding="utf-8")) == digest
                       for p, digest in outputs.items())}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # not atomic on purpose: a torn memo reads as no memo
            self.path.write_text(json.dumps({"common": self.common, "pages": kept}, indent=1,
                                            sort_keys=True) + "\n", encoding="utf-8")
        except OSError as err:
            print(f"note: could not write {self.path}: {err} (the next sync converts every page)")
