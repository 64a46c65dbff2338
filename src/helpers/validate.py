"""Argument checks shared by the helpers: one place for the rule, one wording of the error."""

from __future__ import annotations


def require_bool(name: str, value: object) -> bool:
    """``value`` if it is a real bool; a ``TypeError`` naming ``name`` otherwise.

    A string such as ``"no"`` is truthy: accepted silently it would do the opposite of what
    it says (``create_run_dir(overwrite="no")`` would delete the run).
    """
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value
