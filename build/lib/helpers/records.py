"""Where claim and exercise results are written for the appendix and the autograder."""

from __future__ import annotations

import json
import os
from pathlib import Path


def append_record(env_var: str, record: dict) -> Path | None:
    """Append ``record`` as one JSON line to the file named by ``env_var``, if it is set.

    The book build and the test run set the variable (see the Makefile); a learner's run
    leaves it unset and writes nothing.
    """
    target = os.environ.get(env_var, "").strip()
    if not target:
        return None
    path = Path(target)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True, allow_nan=False) + "\n")
    except OSError as err:
        raise RuntimeError(f"could not append to {env_var}={target!r} ({type(err).__name__}: "
                           f"{err.strerror or err}); the result above stands, its record "
                           f"was not written") from err
    return path
