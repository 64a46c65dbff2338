"""The claim construct: every claim of the book is checked by code (see CONVENTIONS.md).

Taught in chapter 00 and used in every chapter::

    with claim("C24", "4 micro-batches with loss/4 equal one batch of 32") as c:
        if device.type != "cuda":
            c.skip("needs CUDA: the effect only exists on a GPU")
        assert max_abs_diff < 1e-6, max_abs_diff
"""

from __future__ import annotations

import platform
import re
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from types import TracebackType

import torch

from .device import pick_device
from .records import append_record

CLAIMS_LOG_ENV_VAR = "BOOK_CLAIMS_LOG"
_ID_RE = re.compile(r"^C\d{2}$")


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

    def line(self) -> str:
        why = f" ({self.reason})" if self.reason else ""
        return (
            f"{self.id} {self.status}{why}: {self.statement} "
            f"[device={self.device}, torch={self.torch}]"
        )


_RECORDS: list[ClaimRecord] = []


def claim_records() -> list[ClaimRecord]:
    """The claims checked so far in this process, in order."""
    return list(_RECORDS)


class Claim:
    """Context manager behind :func:`claim`; its block is the evidence."""

    def __init__(self, claim_id: str, statement: str, device: torch.device | str | None) -> None:
        if not isinstance(claim_id, str) or not _ID_RE.match(claim_id):
            raise ValueError(f"claim id must look like 'C07' (see CLAIMS.md), got {claim_id!r}")
        if not isinstance(statement, str) or not statement.strip():
            raise ValueError("a claim needs a non-empty statement of what is being checked")
        self.id = claim_id
        self.statement = statement.strip()
        self.device = str(torch.device(device) if device is not None else pick_device())
        self.record: ClaimRecord | None = None
        self._start = 0.0

    def skip(self, reason: str) -> None:
        """Stop checking here and report the claim as skipped, with the reason shown."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("a skipped claim must say why it was skipped")
        raise ClaimSkipped(reason.strip())

    def __enter__(self) -> Claim:
        self._start = time.perf_counter()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc_type is None:
            status, reason = "held", ""
        elif issubclass(exc_type, ClaimSkipped):
            status, reason = "skipped", str(exc)
        elif issubclass(exc_type, Exception):
            detail = (str(exc).strip() or "no message").splitlines()[0]
            status, reason = "failed", f"{exc_type.__name__}: {detail}"
        else:  # KeyboardInterrupt and friends: not a verdict on the claim
            return False
        self.record = ClaimRecord(
            id=self.id,
            statement=self.statement,
            status=status,
            reason=reason,
            device=self.device,
            torch=torch.__version__,
            seconds=round(time.perf_counter() - self._start, 4),
            python=platform.python_version(),
            when=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        _RECORDS.append(self.record)
        append_record(CLAIMS_LOG_ENV_VAR, asdict(self.record))
        print(self.record.line())
        return status == "skipped"  # swallow only the skip; a failure propagates


def claim(claim_id: str, statement: str, device: torch.device | str | None = None) -> Claim:
    """Check one claim from CLAIMS.md: the ``with`` block computes the evidence and asserts it.

    Prints one line (ID, held / failed / skipped with the reason, device, torch version) and
    appends it to the file named by ``BOOK_CLAIMS_LOG`` when that is set. A failed claim
    re-raises, so the notebook run fails.
    """
    return Claim(claim_id, statement, device)
