"""Writing a file so that a crash leaves the old version or the new one, never half (taught in
chapter 08, where ``save_checkpoint`` uses it).

The temporary file is made by ``mkstemp`` beside the target (unpredictable name, O_EXCL), is
named ``.NAME.HOST.PID.RANDOM.tmp`` so that a later save on the same machine can remove one
whose writer died, and is renamed over the target with ``os.replace`` after an fsync (on macOS
also ``F_FULLFSYNC``, which its ``fsync`` does not imply); the directory is fsynced too. The
host is in the name because a PID means something only on its own machine, in its own PID
namespace: a directory shared by several machines (or containers, each with its own host name,
as they have by default) holds temporary files of saves that this one cannot see.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None


def _current_umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)  # elsewhere: set and put back at once
    os.umask(mask)
    return mask


def _mode_for(path: Path) -> int:
    """Permission bits for the new file at ``path``: the old file's, or what ``open`` gives."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode) & 0o777
    except FileNotFoundError:
        return 0o666 & ~_current_umask()


def host_tag() -> str:
    """This machine's host name as it appears in temporary names: every character other than
    a letter, a digit or ``-`` replaced by ``-`` (a dot would split the name), at most 32."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:32] or "host"


def _temp_pattern(path: Path) -> re.Pattern[str]:
    """Names of this checkpoint's temporary files written on this machine, with the writer's
    PID as group 1, 2 or 3: ``.NAME.HOST.PID.RANDOM.tmp`` (mkstemp, this host only), and
    the names of older versions, which carried no host: ``.NAME.PID.RANDOM.tmp`` and
    ``.NAME.tmp-PID``."""
    name, host = re.escape(f".{path.name}."), re.escape(host_tag())
    return re.compile(rf"{name}(?:{host}\.(\d+)\.[a-z0-9_]+\.tmp|(\d+)\.[a-z0-9_]+\.tmp"
                      rf"|tmp-(\d+))")


def _pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user counts; so does an odd number)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def remove_stale_temps(path: Path) -> list[str]:
    """Delete temporary files of ``path`` left by processes that died mid-save; return names.

    Only regular files are removed (a link is never followed or deleted), only this machine's
    (the host is in the name), and only when their writer's PID is gone: a save still running
    in this or another process, or on another machine sharing the directory, is left alone.
    """
    if os.name != "posix":  # os.kill(pid, 0) would end the process on Windows
        return []
    pattern, removed = _temp_pattern(path), []
    with os.scandir(path.parent) as entries:
        for entry in entries:
            match = pattern.fullmatch(entry.name)
            if not match or not entry.is_file(follow_symlinks=False):
                continue
            if not _pid_alive(int(next(g for g in match.groups() if g))):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                removed.append(entry.name)
    return removed


_CAN_FSYNC_DIRECTORY = os.name == "posix"


def _flush_to_disk(fd: int) -> None:
    """``os.fsync(fd)``, and on macOS also ``fcntl(fd, F_FULLFSYNC)``: there ``fsync`` hands
    the data to the drive, whose own cache may still lose it in a power cut (``man fsync``
    on macOS); ``F_FULLFSYNC`` asks the drive to write it. A file system that does not
    support it (some network ones) keeps the plain ``fsync``."""
    os.fsync(fd)
    full_fsync = getattr(fcntl, "F_FULLFSYNC", None) if fcntl is not None else None
    if full_fsync is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, full_fsync)


def _fsync_directory(directory: Path) -> None:
    """Make a rename inside ``directory`` durable (POSIX; Windows cannot open a directory,
    and its rename is made durable by the file system's own journal)."""
    if not _CAN_FSYNC_DIRECTORY:
        return
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_atomically(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Call ``write`` on a fresh temporary file beside ``path`` (O_EXCL: a planted link is
    never followed), fsync it, and rename it over ``path``, keeping the old file's permission
    bits: a crash leaves the old file or the new one, never half of one. On any failure the
    temporary file is removed."""
    mode = _mode_for(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent,
                               prefix=f".{path.name}.{host_tag()}.{os.getpid()}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            if hasattr(os, "fchmod"):  # Windows has it only from Python 3.13
                os.fchmod(f.fileno(), mode)
            write(f)
            f.flush()
            _flush_to_disk(f.fileno())
        if not hasattr(os, "fchmod"):
            os.chmod(tmp, mode)
        os.replace(tmp, path)  # atomic on POSIX: old file or new, never half
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_directory(path.parent)


