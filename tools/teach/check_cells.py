"""What the grader reads from the book (issue 34): each exercise's check cell as the student
edition has it, the chapter's own imports, and the part of a check cell the grader runs with
the names it reads from the notebook (tools/teach/trusted_check.py runs it; see its docstring
for what crosses from the sandbox and how).
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import nbformat

from tools.build.chapter_format import CHECK_RE, STUB_RE, ipynb_from_myst, student_text

# A check cell may begin with ``def probe_<label>(...)``: code that must watch the answer
# while it runs (hooks on a model it builds, the random generators, a model changed in place)
# and returns only plain data. The grader's run of the check leaves the def out and calls the
# notebook's probe instead (see check_program); the verdict is the ``with`` block's
# assertions on that data, computed here.
PROBE_PREFIX = "probe_"


def book_check_cells(chapter: Path) -> dict[str, str]:
    """The check cell of each exercise, as the student edition of ``chapter`` has it."""
    notebook = nbformat.reads(ipynb_from_myst(student_text(chapter.read_text("utf-8"))), 4)
    return {m["label"]: cell.source for cell in notebook.cells if cell.cell_type == "code"
            for m in [CHECK_RE.search(cell.source)] if m}


def book_imports(chapter: Path) -> dict[str, tuple[str, str | None]]:
    """name -> (module, attribute or None) for every top-level import of the chapter's code."""
    from IPython.core.inputtransformer2 import TransformerManager

    notebook = nbformat.reads(ipynb_from_myst(student_text(chapter.read_text("utf-8"))), 4)
    names: dict[str, tuple[str, str | None]] = {}
    for cell in notebook.cells:
        if cell.cell_type != "code" or STUB_RE.match(cell.source):
            continue
        try:  # as IPython runs it (a %magic becomes a call)
            tree = ast.parse(TransformerManager().transform_cell(cell.source))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        names[alias.asname] = (alias.name, None)
                    else:
                        top = alias.name.split(".")[0]
                        names[top] = (top, None)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    if alias.name != "*":
                        names[alias.asname or alias.name] = (node.module, alias.name)
    return names


def check_program(source: str, label: str) -> tuple[ast.Module, list[str]]:
    """The statements of a check cell up to its ``with check_exercise(label)`` block (what comes
    after it, such as clean-up, is not part of the check), and the names they read from the
    notebook (not builtins, not names the check binds before reading them).

    A probe (a top-level ``def probe_...`` before the block, see :data:`PROBE_PREFIX`) is left
    out: the check's call of it is a read of the notebook's function, so it runs there, on the
    arguments the check passes, and only what it returns comes back, as data."""
    tree = ast.parse(source)
    end = next(i for i, node in enumerate(tree.body) if isinstance(node, ast.With)
               and _is_check(node.items[0].context_expr, label))
    body = ast.Module(body=[node for node in tree.body[:end + 1] if not _is_probe(node)],
                      type_ignores=[])
    first_load: dict[str, tuple[int, int]] = {}
    first_store: dict[str, tuple[int, int]] = {}
    local = {n.id for c in ast.walk(body) if isinstance(c, ast.comprehension)
             for n in ast.walk(c.target) if isinstance(n, ast.Name)}  # a comprehension's own
    for node in ast.walk(body):
        where = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if isinstance(node, ast.Name):
            table = first_load if isinstance(node.ctx, ast.Load) else first_store
            table[node.id] = min(table.get(node.id, where), where)
        elif isinstance(node, ast.arg):
            first_store[node.arg] = min(first_store.get(node.arg, where), where)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            first_store[node.name] = min(first_store.get(node.name, where), where)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                first_store[name] = min(first_store.get(name, where), where)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            first_store[node.name] = min(first_store.get(node.name, where), where)
    reads = sorted(name for name, where in first_load.items()
                   if name != "check_exercise" and not hasattr(builtins, name)
                   and name not in local
                   and (name not in first_store or where < first_store[name]))
    return body, reads


def _is_probe(node: ast.stmt) -> bool:
    return isinstance(node, ast.FunctionDef) and node.name.startswith(PROBE_PREFIX)


def _is_check(node: ast.expr, label: str) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "check_exercise" and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == label)
