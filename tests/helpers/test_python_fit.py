"""helpers.python_fit: torch's Requires-Python against the running interpreter (chapter 00,
C46)."""

import builtins
import email.message
import importlib.metadata
import platform

import pytest

from helpers.env import environment_report  # what the report says of it
from helpers.python_fit import (
    _simple_satisfies,
    diagnose_python,
    python_satisfies,
    torch_python_metadata,
)


def _metadata(**headers):
    meta = email.message.Message()
    for key, values in headers.items():
        for value in values if isinstance(values, list) else [values]:
            meta[key.replace("_", "-")] = value
    return meta


def test_torch_python_metadata_reads_the_installed_torch():
    requires, listed = torch_python_metadata()
    meta = importlib.metadata.metadata("torch")
    assert requires == meta["Requires-Python"]
    assert all(v.startswith("3.") for v in listed)
    assert requires is None or python_satisfies(platform.python_version(), requires)


def test_torch_python_metadata_without_requires_python(monkeypatch):
    monkeypatch.setattr(importlib.metadata, "metadata", lambda name: _metadata(
        Name="torch", Classifier=["Programming Language :: Python :: 3.12",
                                  "Programming Language :: Python :: 3 :: Only",
                                  "Topic :: Software Development"]))
    assert torch_python_metadata() == (None, ("3.12",))
    report = environment_report()  # reported as unknown, never an error
    assert report["torch Requires-Python"] == "(not in the metadata) (unknown)"


def test_torch_python_metadata_without_torch_metadata(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "metadata", missing)
    assert torch_python_metadata() == (None, ())


@pytest.mark.parametrize("python, spec, listed, case", [
    ("3.11.9", ">=3.10", ("3.10", "3.11", "3.12"), "fits"),
    ("3.11.9", ">=3.10", (), "fits"),
    ("3.10.0", ">=3.10.0", (), "fits"),
    ("3.9.18", ">=3.10", ("3.10", "3.11"), "does-not-fit"),
    ("3.10.0", ">=3.10.1", (), "does-not-fit"),
    ("3.14.0", ">=3.9,<3.14", (), "does-not-fit"),
    ("3.15.0", ">=3.10", ("3.10", "3.11", "3.12", "3.13", "3.14"), "not-listed"),
    ("3.13.0rc1", ">=3.10", ("3.13",), "fits"),  # a release candidate is read as 3.13.0
    ("3.12.1", None, ("3.12",), "unknown"),
])
def test_diagnose_python_cases(python, spec, listed, case):
    d = diagnose_python(python, spec, listed)
    assert d.case == case, d
    assert str(d).startswith(f"[python: {case}]") and "what to do" in str(d)
    if case == "does-not-fit":
        assert spec in d.advice and "venv" in d.advice
    if case == "fits":
        assert d.advice == "nothing"


def test_diagnose_python_refuses_bad_input():
    with pytest.raises(ValueError, match="python_version"):
        diagnose_python("three", ">=3.10")
    with pytest.raises(ValueError, match="python_version"):
        diagnose_python(3.11, ">=3.10")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="requires_python"):
        diagnose_python("3.11.9", 3.10)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="listed"):
        diagnose_python("3.11.9", ">=3.10", "3.11")
    with pytest.raises(ValueError, match="requires_python"):
        diagnose_python("3.11.9", "newest")


SPECS = [">=3.10", ">3.10", "<3.14", "<=3.11", "==3.11.*", "!=3.11.*", "==3.11", "~=3.10",
         "~=3.10.2", ">=3.9, <3.14", ">=3.8.0,!=3.9.0", "", "===3.11.9"]
PYTHONS = ["3.8.10", "3.9.0", "3.10.0", "3.10.2", "3.11", "3.11.9", "3.12.1", "3.14.0"]


@pytest.mark.parametrize("spec", SPECS)
def test_fallback_parser_agrees_with_packaging(spec):
    specifiers = pytest.importorskip("packaging.specifiers")
    for python in PYTHONS:
        want = specifiers.SpecifierSet(spec).contains(python, prereleases=True)
        assert _simple_satisfies(python, spec) == want, (python, spec)


def test_python_satisfies_without_packaging(monkeypatch):
    real_import = builtins.__import__

    def no_packaging(name, *args, **kwargs):
        if name.startswith("packaging"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_packaging)
    assert python_satisfies("3.11.9", ">=3.10") and not python_satisfies("3.9.1", ">=3.10")
    assert diagnose_python("3.9.1", ">=3.10").case == "does-not-fit"
    with pytest.raises(ValueError, match="cannot read"):
        python_satisfies("3.11.9", "newest")
    with pytest.raises(ValueError, match="~="):
        _simple_satisfies("3.11.9", "~=3")
