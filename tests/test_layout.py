"""The layout that shows the architecture (issue 46) stays so: small folders, small modules,
each package of ``tools`` importing only what its ``__init__.py`` allows, and each module's
test found from the module's path."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULES, MAX_LINES = 10, 500
# what each package of tools may import of tools (its __init__.py says so too)
MAY_IMPORT = {"build": {"build"}, "pages": {"build", "pages"}, "teach": {"build", "teach"},
              "check": {"build", "teach", "check"}}
# tests named for what they test across modules, not for one module
CROSS_CUTTING = {"tests/tools/teach/test_forgeries.py": "forged submissions, graded in a batch",
                 "tests/tools/teach/test_teaching_tools.py": "make student, grade, lab together",
                 "tests/helpers/test_dependencies.py": "requirements.txt against the imports",
                 "tests/helpers/test_helpers_package.py": "the package as pip installs it"}


def code_folders() -> list[Path]:
    roots = [ROOT / "tools", ROOT / "src" / "helpers", ROOT / "book" / "_ext"]
    return [folder for root in roots for folder in [root, *root.rglob("*")]
            if folder.is_dir() and any(folder.glob("*.py"))]


@pytest.mark.parametrize("folder", code_folders(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_folders_and_modules_are_small(folder):
    """src/helpers is flat on purpose: the learner's `from helpers import ...`, one module per
    concern; the folders of tools hold at most ten."""
    modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
    if folder.is_relative_to(ROOT / "tools"):
        assert len(modules) <= MAX_MODULES, f"{len(modules)} modules: split it by concern"
    long = {p.name: n for p in modules if (n := len(p.read_text("utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def tools_imports(path: Path) -> set[str]:
    """The packages of ``tools`` that a module imports (``tools.build.zh`` counts as build)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        found |= {name.split(".")[1] for name in names
                  if name.startswith("tools.") and name.count(".") >= 1}
    return found


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_each_package_imports_only_what_it_may(package):
    folder = ROOT / "tools" / package
    assert (folder / "__init__.py").read_text("utf-8").startswith('"""'), "no docstring"
    wrong = {p.relative_to(ROOT).as_posix(): sorted(tools_imports(p) - MAY_IMPORT[package])
             for p in folder.rglob("*.py")}
    assert not {k: v for k, v in wrong.items() if v}


def test_the_import_rule_sees_a_forbidden_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from tools.teach.grade import grade\nimport tools.build.zh.edition\n")
    assert tools_imports(module) - MAY_IMPORT["build"] == {"teach"}


def module_under_test(test: Path) -> Path:
    rel = test.relative_to(ROOT / "tests")
    name = rel.name.removeprefix("test_")
    if rel.parts[0] == "helpers":
        return ROOT / "src" / "helpers" / name
    if rel.parts[0] == "book_ext":
        return ROOT / "book" / "_ext" / name
    return ROOT / rel.parent / name


def test_each_module_test_is_found_from_the_modules_path():
    tests = [p for folder in ("helpers", "book_ext", "tools")
             for p in (ROOT / "tests" / folder).rglob("test_*.py")]
    assert len(tests) > 40
    lost = [t.relative_to(ROOT).as_posix() for t in tests
            if not module_under_test(t).exists()
            and t.relative_to(ROOT).as_posix() not in CROSS_CUTTING]
    assert lost == [], "tests named for no module: name them for what they test"
