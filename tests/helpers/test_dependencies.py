"""The helpers' declared dependencies are exactly what a chapter needs beyond Colab's set.

On Colab a chapter's first cell installs only the helpers (with their dependencies from
pyproject.toml) on top of what Colab preinstalls (tools/check/colab_check.py lists that set). So
every package the chapters or the helpers import must be preinstalled there or declared, and
every declared package must be used. ``make colab-check`` runs the same path for real.
"""

import ast
import functools
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import jupytext
import tomllib

from tools.build.chapter_format import chapters
from tools.check.colab_check import COLAB_PREINSTALLED

ROOT = Path(__file__).resolve().parents[2]
# Needed without an import statement of ours: torch.onnx.export(..., dynamo=True) loads it.
INDIRECT = {"onnxscript": "torch.onnx's dynamo exporter (chapter 09)"}
# Imported only inside `try: ... except ImportError` with a fallback (chapter 09; helpers.glue,
# which records nothing where myst-nb, the book build's, is absent, as on Colab; helpers.env,
# which reads Requires-Python with its own small parser where packaging is absent).
OPTIONAL = {"torchao", "myst_nb", "packaging"}


def imports(source: str) -> set[str]:
    """Top-level modules imported by ``source`` (IPython magics and shell lines skipped)."""
    code = "\n".join(line[:len(line) - len(line.lstrip())] + "pass"
                     if line.lstrip().startswith(("%", "!")) else line
                     for line in source.splitlines())
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def third_party(modules: set[str]) -> set[str]:
    return {m for m in modules if m not in sys.stdlib_module_names and m != "helpers"}


@functools.cache  # reads every installed package's file list: once, not once per module
def installed_modules() -> dict[str, list[str]]:
    return packages_distributions()


def distribution(module: str) -> str:
    dists = installed_modules().get(module, [module])
    return re.sub(r"[-_.]+", "-", dists[0]).lower()


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}


@functools.cache  # two tests ask; reading every chapter takes seconds
def used_modules() -> frozenset[str]:
    found = set()
    for chapter in chapters():
        notebook = jupytext.read(chapter, fmt="md:myst")
        for cell in notebook.cells:
            if cell.cell_type == "code":
                found |= imports(cell.source)
    for module in (ROOT / "src" / "helpers").glob("*.py"):
        found |= imports(module.read_text())
    return frozenset(third_party(found))


def test_imports_are_read_from_code():
    assert imports("%pip install x\nimport a.b as c\nfrom d.e import f\nfrom . import g") \
        == {"a", "d"}


def test_every_import_is_preinstalled_on_colab_or_declared():
    preinstalled = {p.lower() for p in COLAB_PREINSTALLED}
    needed = {distribution(m) for m in used_modules() - OPTIONAL}
    missing = needed - preinstalled - declared()
    assert not missing, f"imported by a chapter or a helper, not on Colab, not declared: {missing}"


def test_every_declared_dependency_is_used():
    used = {distribution(m) for m in used_modules()} | set(INDIRECT)
    unused = declared() - used
    assert not unused, f"declared in pyproject.toml but imported nowhere: {unused}"


def test_optional_imports_have_a_fallback():
    for chapter in chapters():
        text = chapter.read_text(encoding="utf-8")
        for module in OPTIONAL:
            for match in re.finditer(rf"^(\s*)(from|import) {module}\b", text, re.MULTILINE):
                before = text[:match.start()].splitlines()[-3:]
                assert any(line.strip() == "try:" for line in before), \
                    f"{chapter.name}: {module} imported without a try/except fallback"
