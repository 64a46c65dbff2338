"""The checkpoint file: what a weights-only archive can hold, and reading one back intact
(taught in chapter 08).

``torch.save`` writes a zip archive; ``torch.load(weights_only=True)`` reads tensors and plain
types back and runs no code. On the way in, :func:`_check_extra` refuses what the caller adds
to a checkpoint unless it survives that round trip (torch's own rule, tried in memory). On the
way out, :func:`_read_payload` checks the archive's CRC32s before ``torch.load`` reads it, so a
truncated or corrupt file is a ``ValueError`` saying what is wrong, never a silent wrong
result; an archive written without CRC32s loads with an :class:`UncheckedArchiveWarning`.
``helpers.checkpoint`` writes and reads checkpoints through these.
"""

from __future__ import annotations

import io
import os
import pickle
import re
import struct
import warnings
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

import torch

from .validate import first_line as _first_line

# What torch.load raises on an intact zip archive that is still not a loadable checkpoint.
LOAD_ERRORS = (RuntimeError, EOFError, OSError, pickle.UnpicklingError, KeyError, ValueError,
               TypeError, AttributeError, IndexError, struct.error, zipfile.BadZipFile)


def _unpickler_reason(err: pickle.UnpicklingError) -> str:
    """The useful line of torch's long weights-only refusal: the global it refused."""
    text = str(err)
    found = re.search(r"Unsupported global: GLOBAL (\S+)", text)
    if found:
        return f"global {found.group(1)} is not allowed"
    found = re.search(r"WeightsUnpickler error: *(.*)", text)
    return found.group(1)[:200] if found else _first_line(err)


def _round_trip_error(value: Any) -> str | None:
    """Why ``torch.load(weights_only=True)`` could not give ``value`` back, or ``None``."""
    buffer = io.BytesIO()
    try:
        torch.save(value, buffer)
    except Exception as err:  # noqa: BLE001 - any failure to pickle is the answer
        return f"torch.save cannot write it ({_first_line(err)})"
    buffer.seek(0)
    try:
        torch.load(buffer, weights_only=True)
    except Exception as err:  # noqa: BLE001 - any failure to load back is the answer
        reason = (_unpickler_reason(err) if isinstance(err, pickle.UnpicklingError)
                  else _first_line(err))
        return f"torch.load(weights_only=True) refuses it ({reason})"
    return None


def _unloadable_part(value: Any, where: str) -> tuple[str, Any, str] | None:
    """The innermost part of ``value`` that does not load back: (where, part, why), or None."""
    why = _round_trip_error(value)
    if why is None:
        return None
    if isinstance(value, dict):
        children = ((f"{where}[{k!r}]", v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        children = ((f"{where}[{i}]", v) for i, v in enumerate(value))
    else:
        children = iter(())
    for child_where, child in children:
        found = _unloadable_part(child, child_where)
        if found is not None:
            return found
    return where, value, why


def _check_extra(extra: Any) -> dict[str, Any]:
    """``extra`` as the dict to save; refused unless ``torch.load(weights_only=True)`` can read
    it back (the same round trip in memory, so the rule is torch's own)."""
    if extra is None:
        return {}
    if not isinstance(extra, dict):
        raise TypeError(f"extra must be a dict or None, got {type(extra).__name__}")
    if not extra:
        return extra
    found = _unloadable_part(extra, "extra")
    if found is not None:
        where, part, why = found
        raise ValueError(f"{where} is a {type(part).__name__}, which a weights-only checkpoint "
                         f"cannot hold: {why}; store plain types (dict, list, str, int, float, "
                         "bool, None) or tensors instead")
    return extra


class UncheckedArchiveWarning(UserWarning):
    """A checkpoint archive was written without CRC32s, so its bytes could not be checked."""


def _written_without_crcs(archive: zipfile.ZipFile) -> bool:
    """Whether ``torch.save`` wrote ``archive`` with CRC32s turned off
    (``torch.serialization.set_crc32_options(False)``): every stored CRC32 is 0, also for
    members whose bytes are not empty (a real CRC32 is 0 for one content in 2**32)."""
    members = [info for info in archive.infolist() if info.file_size > 0]
    return bool(members) and all(info.CRC == 0 for info in members)


def _check_archive(path: Path, file: BinaryIO, check_crc: bool = True) -> None:
    """``ValueError`` unless ``file`` is an intact zip archive (what ``torch.save`` writes):
    every member is read and its CRC32 compared with the one stored at save time. An archive
    written without CRC32s is accepted with an :class:`UncheckedArchiveWarning`; with
    ``check_crc=False`` only the archive's directory is read."""
    try:
        with zipfile.ZipFile(file) as archive:
            if not check_crc:
                return
            if _written_without_crcs(archive):
                warnings.warn(
                    f"{path} was written without CRC32s (torch.serialization."
                    "set_crc32_options(False)): its bytes cannot be checked for corruption; "
                    "loading it unchecked", UncheckedArchiveWarning, stacklevel=4)
                return
            corrupt = archive.testzip()
    except MemoryError:
        raise
    except Exception as err:  # noqa: BLE001 - any failure to parse the archive means this
        raise ValueError(f"{path} is not a complete checkpoint (truncated or corrupt?): it is "
                         f"not a readable zip archive as torch.save writes ({_first_line(err)})"
                         ) from err
    if corrupt is not None:
        raise ValueError(f"{path} is corrupt: archive member {corrupt!r} fails its CRC32 check "
                         "(its bytes are not the ones torch.save wrote); refusing to load it")


def _read_payload(path: Path, map_location: str | torch.device, check_crc: bool = True) -> Any:
    """The object in the checkpoint file, after checking the archive; ``ValueError`` for any
    file that is not an intact checkpoint archive."""
    if path.is_dir():
        raise FileNotFoundError(f"no checkpoint at {path}: it is a directory, expected a file")
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    with open(path, "rb") as file:  # one open file: a concurrent save cannot swap it midway
        if os.fstat(file.fileno()).st_size == 0:
            raise ValueError(f"{path} is empty (0 bytes); expected a checkpoint written by "
                             "save_checkpoint")
        _check_archive(path, file, check_crc)
        file.seek(0)
        try:
            return torch.load(file, map_location=map_location, weights_only=True)
        except LOAD_ERRORS as err:
            if isinstance(err, pickle.UnpicklingError) and "Weights only load failed" in str(err):
                raise ValueError(f"{path} contains objects other than tensors and plain types "
                                 f"({_unpickler_reason(err)}); refusing to unpickle it (see "
                                 "chapter 08 on weights_only)") from err
            raise ValueError(f"{path} is an intact archive but torch.load cannot read it as a "
                             f"checkpoint: {_first_line(err)}") from err
