"""What a folder's cut reads ahead of the check: what a capture's lines route by, and the ids a log's
session may have.  Each must be a superset of what the check itself decides, or a unit would miss a
log its capture routes to."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import zstandard

from invariants.read.capture import capture_keys
from invariants.read.load import possible_ids
from invariants.read.source import LogSource


def _line(**values) -> bytes:
    return orjson.dumps(values) + b"\n"


def test_a_captures_keys_are_read_in_every_layout_a_line_may_have(tmp_path: Path) -> None:
    request = {"model": "m", "messages": []}
    text = b"".join(
        [
            _line(sessionId="plain", logLength=3, request=request),  # the harness's own layout
            _line(request=request, sessionId="request-first", sessionFile="hint.jsonl"),  # parsed whole
            _line(sessionId="no-request"),  # refused by the reader, counted here all the same
            b'{"sessionId": "broken", "request": {\n',  # not JSON: routed nowhere
            _line(logLength=1, request=request),  # names no session
            b"\n",
        ]
    )
    for name, data in (("a.requests.jsonl", text), ("b.requests.jsonl.zst", zstandard.compress(text))):
        (tmp_path / name).write_bytes(data)
        keys = capture_keys(tmp_path / name)
        assert keys is not None
        assert keys.ids == {"plain", "request-first", "no-request"}
        assert keys.files == {"hint.jsonl"}


def test_a_capture_line_over_the_limit_or_a_file_that_cannot_be_read_is_not_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert capture_keys(tmp_path / "missing.requests.jsonl") is None
    path = tmp_path / "a.requests.jsonl"
    path.write_bytes(_line(sessionId="x", request={"messages": ["y" * 200]}))
    assert capture_keys(path) is not None
    monkeypatch.setattr("invariants.read.capture.DEFAULT_MAX_LINE", 100)
    assert capture_keys(path) is None


def test_a_logs_possible_ids_hold_every_id_its_replay_may_give(tmp_path: Path) -> None:
    from invariants.replay.session import replay

    header = _line(type="session", version=0, id="the-id", createdAt=1)
    cases = {
        "named.jsonl": header,  # the header's id
        "empty.jsonl": b"",  # no line: the path's stem
        "headless.jsonl": _line(type="turn/start", seq=0, time=1, data={"turn": 1}),  # the name less its suffix
        "other.jsonl": _line(type="session", version=7, id="kept"),  # a header refused, its id kept
        "packed.jsonl.zst": zstandard.compress(header),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        source = LogSource(tmp_path / name, tmp_path)
        ids = possible_ids(source)
        assert ids is not None and replay(source).id in ids, name
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "session.jsonl").write_bytes(b"not json\n")
    source = LogSource(tmp_path / "s" / "session.jsonl", tmp_path)
    assert replay(source).id == "s" and "s" in (possible_ids(source) or set())
    assert possible_ids(LogSource(tmp_path / "gone.jsonl", tmp_path)) is None
