"""The logs an index run found, kept on disk: folders in the order first found, each folder's logs in order."""

from __future__ import annotations

from pathlib import Path

from inspector.index.found import FoundLogs
from invariants.read.source import LogSource


def _src(root: str, rel: str) -> LogSource:
    return LogSource(Path(root) / rel, Path(root))


def test_folders_come_back_in_the_order_first_found_and_their_logs_in_order() -> None:
    found_in = [
        _src("/r", "b/2.jsonl"),
        _src("/r", "a/1.jsonl"),
        _src("/r", "b/1.jsonl"),  # b again, after a: still b's folder, b first
        _src("/s", "c/x.jsonl"),
    ]
    found = FoundLogs(iter(found_in))
    try:
        assert found.count == 4
        assert list(found.folders()) == ["/r/b", "/r/a", "/s/c"]
        assert found.in_folder("/r/b") == [found_in[0], found_in[2]]
        assert found.in_folder("/nowhere") == []
        assert found.root_of("/r/a/1.jsonl") == "/r" and found.root_of("/s/c/x.jsonl") == "/s"
        assert found.root_of("/r/a/2.jsonl") is None
        assert found.has_folder("/s/c") and not found.has_folder("/s")
    finally:
        found.close()


def test_many_logs_in_one_folder_and_none_at_all() -> None:
    many = [_src("/r", f"p/{i:05d}.jsonl") for i in range(2500)]
    found = FoundLogs(many)
    try:
        assert found.count == 2500 and found.in_folder("/r/p") == many
    finally:
        found.close()
    empty = FoundLogs([])
    try:
        assert empty.count == 0 and list(empty.folders()) == []
    finally:
        empty.close()
