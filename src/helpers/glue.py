"""Numbers from the run into the prose: myst-nb's ``glue`` (every chapter that quotes a measured
value; book/README.md, "Numbers in prose").

A chapter never types a number that a cell computed into its prose: it glues the value and the
page shows ``{glue:text}`name:.3f``` filled from the run that produced the page's outputs (on
CPU or GPU, in both editions, which render from one execution).
"""

from __future__ import annotations

import math
import re
from numbers import Real

_NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")


def glue(name: str, value: float | int | str) -> float | int | str:
    """Record ``value`` under ``name`` for the prose (``{glue:text}`name:.2f```), and return it.

    Uses myst-nb's own ``glue`` with ``display=False`` (nothing shows in the cell's output);
    where myst-nb is not installed (Colab) it records nothing: the printed output is what a
    notebook reader sees. A value must be a finite number or a string (a tensor would glue its
    repr, which ``.2f`` cannot format): pass ``tensor.item()``.
    """
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise ValueError(f"a glue name is lower-case letters, digits and _ (e.g. 'c13_loss'), "
                         f"got {name!r}")
    if isinstance(value, bool) or not isinstance(value, (Real, str)):
        raise TypeError(f"glue {name!r}: value must be a number or a string, got "
                        f"{type(value).__name__} (use .item() for a tensor)")
    if isinstance(value, Real):
        value = float(value) if not isinstance(value, int) else value
        if not math.isfinite(value):
            raise ValueError(f"glue {name!r}: {value} cannot be shown as a number in prose")
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        return value
    myst_glue(name, value, display=False)
    return value
