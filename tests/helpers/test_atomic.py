"""Tests for helpers.atomic (the crash-safe write behind save_checkpoint)."""

import os

import pytest

from helpers.atomic import remove_stale_temps, write_atomically


def test_a_failing_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")

    def write(f):
        f.write(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_atomically(target, write)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]


def test_write_replaces_and_keeps_the_mode(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    os.chmod(target, 0o600)
    write_atomically(target, lambda f: f.write(b"new"))
    assert target.read_bytes() == b"new"
    assert os.stat(target).st_mode & 0o777 == 0o600


def test_only_dead_writers_temporaries_are_removed(tmp_path):
    target = tmp_path / "f.bin"
    dead, alive = 2**22 + 12345, os.getpid()  # above Linux's pid_max default: never alive
    (tmp_path / f".f.bin.{dead}.abc123.tmp").write_bytes(b"")
    (tmp_path / f".f.bin.{alive}.def456.tmp").write_bytes(b"")
    (tmp_path / ".other.bin.1.xyz.tmp").write_bytes(b"")
    assert remove_stale_temps(target) == [f".f.bin.{dead}.abc123.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f".f.bin.{alive}.def456.tmp", ".other.bin.1.xyz.tmp"]


def test_where_a_directory_cannot_be_opened_it_is_not(tmp_path, monkeypatch):
    """Windows cannot os.open a directory: the write still lands, with no directory fsync."""
    from helpers import atomic

    opened = []
    real_open = os.open
    monkeypatch.setattr(atomic, "_CAN_FSYNC_DIRECTORY", False)
    monkeypatch.setattr(atomic.os, "open", lambda *a, **k: opened.append(a) or real_open(*a, **k))
    target = tmp_path / "f.bin"
    write_atomically(target, lambda f: f.write(b"data"))
    assert target.read_bytes() == b"data"
    assert opened and not any(str(a[0]) == str(tmp_path) for a in opened)
    assert atomic._CAN_FSYNC_DIRECTORY is False


def test_on_posix_the_directory_is_fsynced(tmp_path, monkeypatch):
    from helpers import atomic

    opened = []
    real_open = os.open
    monkeypatch.setattr(atomic.os, "open", lambda *a, **k: opened.append(a) or real_open(*a, **k))
    write_atomically(tmp_path / "f.bin", lambda f: f.write(b"data"))
    assert os.name != "posix" or any(str(a[0]) == str(tmp_path) for a in opened)


def test_another_machines_temporaries_are_left_alone(tmp_path, monkeypatch):
    """A PID names a process of this machine only: on a directory shared with other hosts, a
    save running there has a PID that may be free here, and its file must stay."""
    from helpers import atomic

    monkeypatch.setattr(atomic.socket, "gethostname", lambda: "node-7.cluster.local")
    assert atomic.host_tag() == "node-7-cluster-local"
    target, dead = tmp_path / "f.bin", 2**22 + 12345  # above Linux's pid_max default
    write_atomically(target, lambda f: f.write(b"data"))  # the name carries this host
    mine = tmp_path / f".f.bin.node-7-cluster-local.{dead}.abc123.tmp"
    theirs = tmp_path / f".f.bin.node-8-cluster-local.{dead}.abc123.tmp"
    for path in (mine, theirs):
        path.write_bytes(b"half")
    assert (remove_stale_temps(target) == [mine.name]) == (os.name == "posix")
    assert theirs.exists()


def test_a_write_without_fchmod_keeps_the_mode(tmp_path, monkeypatch):
    """os.fchmod exists on Windows only from Python 3.13: the mode is then set by path."""
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    os.chmod(target, 0o600)
    monkeypatch.delattr(os, "fchmod", raising=False)
    write_atomically(target, lambda f: f.write(b"new"))
    assert target.read_bytes() == b"new"
    assert os.name != "posix" or os.stat(target).st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]


def test_the_temporary_name_carries_host_and_pid(tmp_path):
    from helpers.atomic import host_tag

    seen = []
    write_atomically(tmp_path / "f.bin", lambda f: seen.extend(os.listdir(tmp_path)))
    assert len(seen) == 1 and seen[0].endswith(".tmp")
    assert seen[0].startswith(f".f.bin.{host_tag()}.{os.getpid()}.")
