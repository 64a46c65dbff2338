"""Whether this Python fits the installed torch, read from torch's own metadata
(``Requires-Python`` and its classifiers), with the advice to give (taught in chapter 00,
claim C46)."""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Sequence
from dataclasses import dataclass

_VERSION_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class PythonDiagnosis:
    """The outcome of :func:`diagnose_python`: a case name, what it means and what to do."""

    case: str  # "fits", "not-listed", "does-not-fit" or "unknown"
    summary: str
    advice: str

    def __str__(self) -> str:
        return f"[python: {self.case}] {self.summary}\n  what to do: {self.advice}"


_CLAUSE_RE = re.compile(r"^(~=|===|==|!=|<=|>=|<|>)\s*(\d+(?:\.\d+)*)(\.\*)?$")
_PY_CLASSIFIER_RE = re.compile(r"^Programming Language :: Python :: (3\.\d+)$")


def torch_python_metadata() -> tuple[str | None, tuple[str, ...]]:
    """torch's ``Requires-Python`` and the ``3.x`` its classifiers list, from the installed
    package's metadata (chapter 00); ``(None, ())`` when there is no metadata to read."""
    try:
        meta = importlib.metadata.metadata("torch")
    except importlib.metadata.PackageNotFoundError:
        return None, ()
    requires = meta.get("Requires-Python")
    listed = tuple(m[1] for c in (meta.get_all("Classifier") or [])
                   if (m := _PY_CLASSIFIER_RE.match(c.strip())))
    return (requires.strip() or None) if requires else None, listed


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _simple_satisfies(version: str, spec: str) -> bool:
    """The fallback for :func:`python_satisfies` where ``packaging`` is not installed.

    Reads what ``Requires-Python`` uses (PEP 440 specifiers on release numbers): clauses
    separated by commas, each ``~=``, ``==``, ``!=``, ``<=``, ``>=``, ``<``, ``>`` or ``===``
    and a number such as ``3.10``; ``==``/``!=`` may end in ``.*`` (a prefix match). Numbers
    are compared as tuples padded with zeros (``3.10 == 3.10.0``); pre-releases are not
    read. Raises ``ValueError`` for a clause it cannot read.
    """
    have = _release(version)
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        match = _CLAUSE_RE.match(clause)
        if not match or (match[3] and match[1] not in ("==", "!=")):
            raise ValueError(f"cannot read the Requires-Python clause {clause!r} in {spec!r}")
        op, want = match[1], _release(match[2])
        width = max(len(have), len(want))
        a, b = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        if match[3]:  # == 3.10.* / != 3.10.*: compare the prefix only
            ok = have[:len(want)] + (0,) * (len(want) - len(have)) == want
            ok = ok if op == "==" else not ok
        elif op == "~=":  # ~= 3.10.2 means >= 3.10.2 and == 3.10.*
            if len(want) < 2:
                raise ValueError(f"~= needs at least two numbers, got {clause!r}")
            ok = a >= b and have[:len(want) - 1] == want[:-1]
        else:
            ok = {"==": a == b, "===": match[2] == version, "!=": a != b, "<=": a <= b,
                  ">=": a >= b, "<": a < b, ">": a > b}[op]
        if not ok:
            return False
    return True


def python_satisfies(python_version: str, requires_python: str) -> bool:
    """Whether a Python version meets a ``Requires-Python`` specifier such as ``>=3.10``.

    Uses ``packaging.specifiers`` (what pip uses) when it is installed, else the small
    parser :func:`_simple_satisfies`. Only the release part of the Python version is read
    (``3.13.0rc1`` is taken as ``3.13.0``), as pip does for the running interpreter. Raises
    ``TypeError`` for a non-string and ``ValueError`` for what is not a version or a spec.
    """
    for name, value in (("python_version", python_version), ("requires_python", requires_python)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    match = _VERSION_RE.match(python_version.strip())
    if not match:
        raise ValueError(f"python_version: not a version string: {python_version!r}")
    release = ".".join(part for part in match.groups() if part is not None)
    try:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
    except ImportError:  # not every environment has packaging: read the spec ourselves
        return _simple_satisfies(release, requires_python)
    try:
        return SpecifierSet(requires_python).contains(release, prereleases=True)
    except InvalidSpecifier as err:
        raise ValueError(f"requires_python: not a specifier: {requires_python!r}") from err


def diagnose_python(python_version: str, requires_python: str | None,
                    listed: Sequence[str] = ()) -> PythonDiagnosis:
    """Say whether the running Python fits a torch, from torch's own metadata (chapter 00).

    ``requires_python`` is torch's ``Requires-Python`` (``None`` where the metadata has none)
    and ``listed`` the ``3.x`` versions its classifiers name; :func:`torch_python_metadata`
    reads both. ``Requires-Python`` is usually only a lower bound: a Python newer than any
    listed one satisfies it, yet has no wheel of that release ("not-listed"). Passing the
    facts in lets the chapter and the tests show every case on any machine; the chapter
    reports the reader's own case and never fails on it.
    """
    if requires_python is not None and not isinstance(requires_python, str):
        raise TypeError(f"requires_python must be a string or None, got {requires_python!r}")
    if isinstance(listed, str) or not all(isinstance(v, str) for v in listed):
        raise TypeError(f"listed must be a sequence of versions such as '3.12', got {listed!r}")
    match = _VERSION_RE.match(python_version.strip()) if isinstance(python_version, str) else None
    if not match:
        raise ValueError(f"python_version: not a version string: {python_version!r}")
    python, minor = python_version.strip(), f"{match[1]}.{match[2]}"
    span = f" (this release lists Python {', '.join(listed)})" if listed else ""
    if requires_python is None:
        return PythonDiagnosis(
            "unknown", f"torch's metadata has no Requires-Python, so whether Python {python} "
            "fits cannot be read from it (a source or conda build, or no metadata)",
            "if torch imports and runs, nothing; before installing, check that a wheel exists "
            f"for Python {minor}: pip install picks the wheel built for this interpreter, or "
            "says 'No matching distribution found for torch' when there is none")
    if not python_satisfies(python, requires_python):
        return PythonDiagnosis(
            "does-not-fit", f"Python {python} does not meet torch's Requires-Python "
            f"{requires_python!r}{span}; pip would not have installed it here (it was forced, "
            "or the environment's Python changed after the install)",
            f"make a virtual environment with a Python that fits {requires_python!r} (e.g. "
            "python3.12 -m venv .venv) and install torch and torchvision there, in one command; "
            "or install an older torch release whose Requires-Python this Python meets")
    if listed and minor not in listed:
        return PythonDiagnosis(
            "not-listed", f"Python {python} meets Requires-Python {requires_python!r}, which is "
            f"only a lower bound, but not a Python this torch names{span}",
            "if torch imports and runs, nothing; a reinstall may find no wheel for this Python "
            "('No matching distribution found'): then use a listed Python, or a newer torch")
    return PythonDiagnosis(
        "fits", f"Python {python} meets torch's Requires-Python {requires_python!r}{span}",
        "nothing")
