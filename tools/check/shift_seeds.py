"""Every seed a chapter sets, shifted together (``make stress-seeds``,
tools/check/stress_claims.py).

A claim is about PyTorch, not about one random draw: it must hold when every seed of the
chapter changes at once, the helpers' own seeds included (:func:`shifted_helpers`: a shifted
copy of the package, imported in place of the installed one). :func:`shift_source` finds
the seeds written as integer literals in a code cell (``set_seed(0)``,
``torch.manual_seed(1)``, ``torch.Generator().manual_seed(7)``, ``random.seed(2)``,
``np.random.seed(2)``, ``np.random.default_rng(3)``, a ``seed=0`` keyword, a ``seed: int = 0``
default, ``generator_seed=7``) with Python's own parser and adds the shift to each, leaving the
rest of the cell byte for byte. Seeds computed at run time (``seed + i``) follow from the
literals they start from; seeds torch derives itself (a DataLoader worker's) are left to it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

# Calls whose first positional argument is a seed
SEED_CALLS = {"set_seed", "manual_seed", "manual_seed_all", "seed", "default_rng",
              "RandomState", "Random", "PCG64"}
# Keyword arguments and parameters that hold a seed: seed, generator_seed, base_seed ...
SEED_NAME_RE = re.compile(r"(?:\w+_)?seed")
# A line that IPython reads as a magic or a shell escape: blanked for the parser
MAGIC_RE = re.compile(r"^(\s*)([%!].*)$", re.M)


def _callee(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _int_literal(node: ast.AST | None) -> bool:
    return (isinstance(node, ast.Constant) and type(node.value) is int) or (
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
        and _int_literal(node.operand))


def _parse(source: str) -> ast.Module:
    return ast.parse(MAGIC_RE.sub(lambda m: m[1] + "pass", source))  # same line numbers


def _seeds_in(node: ast.expr | None) -> list[ast.expr]:
    """An int literal, or the int literals of a list or tuple (``RandomState([5])``)."""
    if _int_literal(node):
        return [node]
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts and all(map(_int_literal,
                                                                           node.elts)):
        return list(node.elts)
    return []


def seed_positions(source: str) -> dict[str, list[int]]:
    """For each function ``source`` defines, the positions of its parameters named like a seed
    (so that ``seen_in_workers(7)`` is shifted when ``def seen_in_workers(generator_seed)``)."""
    return {node.name: [i for i, a in enumerate(node.args.posonlyargs + node.args.args)
                        if SEED_NAME_RE.fullmatch(a.arg)]
            for node in ast.walk(_parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def seed_literals(source: str, positions: dict[str, list[int]] | None = None
                  ) -> list[ast.expr]:
    """The integer literals of ``source`` that set a seed, in source order.

    ``positions`` names the seed parameters of functions defined elsewhere (other cells).
    """
    tree = _parse(source)
    positions = {**(positions or {}), **seed_positions(source)}
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if _callee(node) in SEED_CALLS and node.args:
                found += _seeds_in(node.args[0])
            for index in positions.get(_callee(node), []) if isinstance(node.func, ast.Name) \
                    else []:
                if index < len(node.args):
                    found += _seeds_in(node.args[index])
            found += [k.value for k in node.keywords
                      if k.arg and SEED_NAME_RE.fullmatch(k.arg) and _int_literal(k.value)]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            positional = node.args.posonlyargs + node.args.args
            defaults = dict(zip(positional[len(positional) - len(node.args.defaults):],
                                node.args.defaults, strict=True))
            defaults.update((a, d) for a, d in zip(node.args.kwonlyargs,
                                                   node.args.kw_defaults, strict=True) if d)
            found += [d for a, d in defaults.items()
                      if SEED_NAME_RE.fullmatch(a.arg) and _int_literal(d)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if SEED_NAME_RE.fullmatch(node.target.id) and _int_literal(node.value):
                found.append(node.value)  # a dataclass field `seed: int = 0`
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def shift_source(source: str, shift: int, positions: dict[str, list[int]] | None = None
                 ) -> tuple[str, int]:
    """``source`` with every seed literal increased by ``shift``, and how many were changed.

    ``positions``: see :func:`seed_literals`. Raises ``ValueError`` for a shift that is not a
    non-negative int, or a cell that does not parse (a shifted copy of a chapter that no
    longer runs would prove nothing).
    """
    if isinstance(shift, bool) or not isinstance(shift, int) or shift < 0:
        raise ValueError(f"shift must be an int >= 0, got {shift!r}")
    try:
        literals = seed_literals(source, positions)
    except SyntaxError as err:
        raise ValueError(f"a code cell does not parse, so its seeds cannot be found: {err}") \
            from err
    lines = source.splitlines(keepends=True)
    for node in reversed(literals):  # right to left: earlier offsets stay valid
        if node.lineno != node.end_lineno:
            raise ValueError(f"a seed literal spans lines at line {node.lineno}")
        line = lines[node.lineno - 1].encode()
        old = line[node.col_offset:node.end_col_offset].decode()
        new = str(int(old.replace(" ", "")) + shift)
        lines[node.lineno - 1] = (line[:node.col_offset] + new.encode()
                                  + line[node.end_col_offset:]).decode()
    return "".join(lines), len(literals)


HELPERS = Path(__file__).resolve().parents[2] / "src" / "helpers"


def shifted_helpers(shift: int, into: Path) -> Path:
    """A copy of the helpers package in ``into``/helpers with every seed literal shifted like
    a chapter's (the defaults no cell writes: the data split, the datasets, the loaders);
    returns ``into``, the folder to put first on ``sys.path``."""
    target = into / "helpers"
    target.mkdir(parents=True)
    for module in sorted(HELPERS.glob("*.py")):
        shifted, _ = shift_source(module.read_text(encoding="utf-8"), shift)
        (target / module.name).write_text(shifted, encoding="utf-8")
    return into


def prelude(folder: Path) -> str:
    """The first cell of a shifted run: the shifted helpers in ``folder`` are the ones the
    chapter imports (and its DataLoader workers, which inherit ``sys.path``)."""
    return (f"import sys\nsys.path.insert(0, {str(folder)!r})\nimport helpers\n"
            f"assert helpers.__file__.startswith({str(folder)!r}), helpers.__file__")


def shift_notebook(notebook, shift: int, helpers: Path | None = None) -> int:
    """Shift the seeds of every code cell of an nbformat notebook in place; returns the count.
    ``helpers``: a folder from :func:`shifted_helpers`, imported first (:func:`prelude`)."""
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    positions: dict[str, list[int]] = {}
    for cell in code:
        try:
            positions.update(seed_positions(cell.source))
        except SyntaxError as err:
            raise ValueError(f"a code cell does not parse: {err}") from err
    total = 0
    for cell in code:
        cell.source, count = shift_source(cell.source, shift, positions)
        total += count
    if helpers is not None:
        import nbformat

        notebook.cells.insert(0, nbformat.v4.new_code_cell(prelude(helpers)))
    return total
