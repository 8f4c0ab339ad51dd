"""Issue 34, items 2 and 9: every writer replaces its target whole or not at all, never through a link."""

from __future__ import annotations

import errno
import os

import pytest

from invariants.model.atomic import WriteRefused, atomic_file, atomic_folder, write_atomic, write_error


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".tmp", ".old")))


def test_a_new_file_is_written(tmp_path):
    write_atomic(tmp_path / "r.json", "report\n")
    assert (tmp_path / "r.json").read_text() == "report\n"
    assert _leftovers(tmp_path) == []


def test_a_hard_link_is_never_written_through(tmp_path):
    log = tmp_path / "x.jsonl"
    log.write_text("the log\n")
    os.link(log, tmp_path / "o.json")
    write_atomic(tmp_path / "o.json", "the report\n")
    assert log.read_text() == "the log\n"  # the linked inode is untouched
    assert (tmp_path / "o.json").read_text() == "the report\n"
    assert os.stat(log).st_nlink == 1


def test_a_symlink_is_refused_and_its_target_untouched(tmp_path):
    log = tmp_path / "x.jsonl"
    log.write_text("the log\n")
    (tmp_path / "o.json").symlink_to(log)
    with pytest.raises(WriteRefused, match="symlink"):
        write_atomic(tmp_path / "o.json", "the report\n")
    assert log.read_text() == "the log\n"
    assert (tmp_path / "o.json").is_symlink()
    assert _leftovers(tmp_path) == []


def test_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "o.json")
    with pytest.raises(WriteRefused, match="not a regular file"):
        write_atomic(tmp_path / "o.json", "x")


def test_a_full_disk_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "o.json"
    target.write_text("the previous report\n")
    with pytest.raises(OSError) as info:
        with atomic_file(target) as fh:
            fh.write("half of a new rep")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # the disk fills mid-write
    assert target.read_text() == "the previous report\n"
    assert _leftovers(tmp_path) == []
    assert write_error(target, "report", info.value) == f"{target}: cannot write report (No space left on device)"


def test_an_interrupted_write_leaves_no_temporary(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with atomic_file(tmp_path / "o.json", "wb") as fh:
            fh.write(b"x")
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_a_replaced_file_keeps_its_permissions(tmp_path):
    target = tmp_path / "o.json"
    target.write_text("old")
    target.chmod(0o640)
    write_atomic(target, "new")
    assert target.stat().st_mode & 0o777 == 0o640


def test_a_folder_is_complete_or_absent(tmp_path):
    out = tmp_path / "repro"
    with pytest.raises(RuntimeError):
        with atomic_folder(out) as tmp:
            (tmp / "a.jsonl").write_text("half")
            raise RuntimeError("the reducer failed")
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []
    with atomic_folder(out) as tmp:
        (tmp / "a.jsonl").write_text("whole")
    assert (out / "a.jsonl").read_text() == "whole"
    with pytest.raises(FileExistsError):
        with atomic_folder(out):
            pass
    with atomic_folder(out, replace=True) as tmp:
        (tmp / "b.jsonl").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == ["b.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repro"]


def test_a_folder_symlink_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "repro").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(WriteRefused):
        with atomic_folder(tmp_path / "repro", replace=True):
            pass
    assert (tmp_path / "repro").is_symlink()
