"""Every seed a chapter sets, shifted together (``make stress-seeds``, tools/stress_claims.py).

A claim is about PyTorch, not about one random draw: it must hold when every seed of the
chapter changes at once, and every seed the process sets (the helpers' defaults included:
:data:`PRELUDE`). :func:`shift_source` finds the seeds written as integer literals in a
code cell (``set_seed(0)``, ``torch.manual_seed(1)``, ``torch.Generator().manual_seed(7)``,
``random.seed(2)``, ``np.random.seed(2)``, ``np.random.default_rng(3)``, a ``seed=0`` keyword,
a ``seed: int = 0`` default, ``generator_seed=7``) with Python's own parser and adds the shift
to each, leaving the rest of the cell byte for byte. Seeds computed at run time (``seed + i``)
follow from the literals they start from.
"""

from __future__ import annotations

import ast
import re

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


# Run first in a shifted chapter's kernel: every seed the *process* sets is shifted too, also
# the ones no cell writes (the helpers' defaults: the data split, the loaders' generators), by
# wrapping the seeding functions of torch, NumPy (legacy and default_rng) and Python's random,
# and torch.Generator (a subclass whose isinstance still accepts torch's own generators).
# Only int seeds are shifted (None, arrays and SeedSequences pass as they are), and only where
# the book's code or the helpers set them: torch seeds a DataLoader worker with base_seed +
# worker_id itself, and a chapter may check exactly that.
PRELUDE = """\
# seed-shift prelude (tools/shift_seeds.py): every int seed this process sets, plus SHIFT
import functools as _ft, numbers as _nb, random as _rd, sys as _sys
import numpy as _np, torch as _tc

_SHIFT = {shift}


def _plus(seed, limit=2**32, depth=2):
    caller = _sys._getframe(depth).f_globals.get("__name__", "")
    if caller == "torch" or caller.startswith(("torch.", "numpy.")):
        return seed  # torch seeding a DataLoader worker, or NumPy seeding itself
    if isinstance(seed, _nb.Integral) and not isinstance(seed, bool):
        return (int(seed) + _SHIFT) % limit
    return seed


def _shifting(function, limit=2**32):
    @_ft.wraps(function)
    def shifted(seed=None, *args, **kwargs):
        return function(_plus(seed, limit, depth=2), *args, **kwargs)
    return shifted


_tc.manual_seed = _tc.random.manual_seed = _shifting(_tc.random.manual_seed, 2**63)
_tc.cuda.manual_seed = _shifting(_tc.cuda.manual_seed, 2**63)
_tc.cuda.manual_seed_all = _shifting(_tc.cuda.manual_seed_all, 2**63)
_np.random.seed = _shifting(_np.random.seed)
_np.random.default_rng = _shifting(_np.random.default_rng)
_rd.seed = _shifting(_rd.seed)
_Generator, _RandomState, _Random = _tc.Generator, _np.random.RandomState, _rd.Random


class _AcceptsTheOriginal(type(_Generator)):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _Generator)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _Generator)


class _ShiftedGenerator(_Generator, metaclass=_AcceptsTheOriginal):
    def manual_seed(self, seed):
        return super().manual_seed(_plus(seed, 2**63))


class _ShiftedRandomState(_RandomState):
    def __init__(self, seed=None):
        super().__init__(_plus(seed))

    def seed(self, seed=None):
        super().seed(_plus(seed))


class _ShiftedRandom(_Random):
    def seed(self, a=None, version=2):
        super().seed(_plus(a), version)


_tc.Generator = _ShiftedGenerator
_np.random.RandomState = _ShiftedRandomState
_rd.Random = _ShiftedRandom
"""


def prelude(shift: int) -> str:
    """The first cell of a chapter run with its seeds shifted (see ``PRELUDE``)."""
    if isinstance(shift, bool) or not isinstance(shift, int) or shift < 0:
        raise ValueError(f"shift must be an int >= 0, got {shift!r}")
    return PRELUDE.format(shift=shift)


def shift_notebook(notebook, shift: int) -> int:
    """Shift the seeds of every code cell of an nbformat notebook in place, and put
    :func:`prelude` first, so that the seeds no cell writes move too; returns the count of
    literals shifted."""
    import nbformat

    notebook.cells.insert(0, nbformat.v4.new_code_cell(prelude(shift)))
    code = [cell for cell in notebook.cells[1:] if cell.cell_type == "code"]
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
    return total
