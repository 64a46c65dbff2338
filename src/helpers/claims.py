"""The claim construct: every claim of the book is checked by code (claims/ledger.yml lists
them; book/README.md describes the claim cell).

Taught in chapter 00 and used in every chapter::

    with claim("C24", "4 micro-batches with loss/4 equal one batch of 32") as c:
        if device.type != "cuda":
            c.skip("needs CUDA: the effect only exists on a GPU")
        assert max_abs_diff < 1e-6, max_abs_diff

A claim with halves that can be checked apart (one everywhere, one only on a GPU) is checked
in one cell per half, with ``part="memory"``, ``part="speed"``: each half gets its own result,
so a half that was skipped is never reported as held.
"""

from __future__ import annotations

import platform
import re
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

import torch

from .device import pick_device
from .records import append_record
from .validate import require_device

CLAIMS_LOG_ENV_VAR = "BOOK_CLAIMS_LOG"
_ID_RE = re.compile(r"C(?:\d{2}|[1-9]\d{2})")  # fullmatch: "C07\n", "C001" are not IDs
_PART_RE = re.compile(r"[a-z][a-z0-9-]{0,19}")


class ClaimSkipped(Exception):
    """Raised by :meth:`Claim.skip` to leave the claim's block; caught by the claim."""


@dataclass(frozen=True)
class ClaimRecord:
    """One checked claim, as printed and as written to the claims log."""

    id: str
    statement: str
    status: str  # "held", "failed" or "skipped"
    reason: str
    device: str
    torch: str
    seconds: float
    python: str = ""
    when: str = ""  # UTC, ISO 8601, when the claim was checked
    part: str = ""  # which half of the claim, when it is checked in parts

    def line(self) -> str:
        why = f" ({self.reason})" if self.reason else ""
        part = f" [{self.part}]" if self.part else ""
        return (
            f"{self.id}{part} {self.status}{why}: {self.statement} "
            f"[device={self.device}, torch={self.torch}]"
        )


_RECORDS: list[ClaimRecord] = []


def claim_records() -> list[ClaimRecord]:
    """The claims checked so far in this process, in order."""
    return list(_RECORDS)


class Claim:
    """What the ``with claim(...) as c`` block gets: :meth:`skip`, and the record at the end."""

    def __init__(self, claim_id: str, statement: str, device: torch.device | str | None,
                 part: str = "") -> None:
        if not isinstance(claim_id, str) or not _ID_RE.fullmatch(claim_id):
            raise ValueError(f"claim id must look like 'C07' (see claims/ledger.yml), "
                             f"got {claim_id!r}")
        if not isinstance(statement, str) or not statement.strip():
            raise ValueError("a claim needs a non-empty statement of what is being checked")
        if not isinstance(part, str) or (part and not _PART_RE.fullmatch(part)):
            raise ValueError(f"part must be a short lower-case word like 'speed', got {part!r}")
        self.id, self.statement, self.part = claim_id, statement.strip(), part
        self.device = str(require_device("device", device) if device is not None
                          else pick_device())
        self.record: ClaimRecord | None = None

    def skip(self, reason: str) -> None:
        """Stop checking here and report the claim as skipped, with the reason shown."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("a skipped claim must say why it was skipped")
        raise ClaimSkipped(reason.strip())

    def finish(self, status: str, reason: str, seconds: float) -> None:
        self.record = ClaimRecord(
            id=self.id, statement=self.statement, status=status, reason=reason,
            device=self.device, torch=torch.__version__, seconds=round(seconds, 4),
            python=platform.python_version(),
            when=datetime.now(timezone.utc).isoformat(timespec="seconds"), part=self.part)
        _RECORDS.append(self.record)
        print(self.record.line())  # first: a log that cannot be written must not hide it
        append_record(CLAIMS_LOG_ENV_VAR, asdict(self.record))


def claim(claim_id: str, statement: str, device: torch.device | str | None = None,
          part: str = "") -> AbstractContextManager[Claim]:
    """Check one claim of the ledger: the ``with`` block computes the evidence and asserts it.

    Prints one line (ID, held / failed / skipped with the reason, device, torch version) and
    appends it to the file named by ``BOOK_CLAIMS_LOG`` when that is set. A failed claim
    re-raises, so the notebook run fails. ``device`` (default: :func:`helpers.pick_device`)
    must be a ``torch.device`` or a name such as ``"cuda:0"`` that this machine has: an int,
    or a GPU that is not here, raises instead of being printed as the claim's device.
    """
    return _checking(Claim(claim_id, statement, device, part))


@contextmanager
def _checking(check: Claim) -> Iterator[Claim]:
    start = time.perf_counter()
    try:
        yield check
    except ClaimSkipped as skipped:
        check.finish("skipped", str(skipped), time.perf_counter() - start)
    except Exception as exc:
        detail = (str(exc).strip() or "no message").splitlines()[0]
        check.finish("failed", f"{type(exc).__name__}: {detail}", time.perf_counter() - start)
        raise
    else:
        check.finish("held", "", time.perf_counter() - start)
