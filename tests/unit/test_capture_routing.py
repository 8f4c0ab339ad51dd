"""Where a capture line that names no session goes (CAPTURE-FORMAT.md: ``sessionId`` is needed only
when a file covers more than one session)."""

from __future__ import annotations

from pathlib import Path

from invariants import check
from tests.support.logs import Log
from tests.support.plans import whole_folders


def _folder(tmp_path: Path, capture: str, *, others: int = 1, zst_twin: bool = False) -> Path:
    """Log ``aaa`` whose requests are recorded without a sessionId in ``capture``, beside ``others`` other logs."""
    a = Log("aaa", era="late")
    a.clean_turn(1, header_reason="initial", capture=True)
    a.write(tmp_path / "aaa.jsonl")
    for i in range(others):
        b = Log(f"other{i}", era="late")
        b.clean_turn(1, header_reason="initial")
        b.write(tmp_path / f"other{i}.jsonl")
    if zst_twin:  # another log of the same name, so the capture's name no longer tells one log
        import zstandard

        (tmp_path / "aaa.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(Log("twin", era="late").text()))
    a.write_requests(tmp_path / capture, [{k: v for k, v in r.items() if k != "sessionId"} for r in a.requests])
    return tmp_path


def _routed(result) -> list[tuple[str, str | None]]:
    return [(r.status, r.session) for r in result.requests]


def test_a_logs_own_capture_names_its_session_among_other_logs(tmp_path):
    result = check([_folder(tmp_path, "aaa.requests.jsonl")])
    assert _routed(result) == [("ok", "aaa")]
    assert [f.rule for f in result.findings] == []


def test_a_folders_capture_without_session_ids_goes_to_its_one_session_only(tmp_path):
    assert _routed(check([_folder(tmp_path / "one", "requests.jsonl", others=0)])) == [("ok", "aaa")]
    result = check([_folder(tmp_path / "two", "requests.jsonl")])
    assert _routed(result) == [("unexplained", None)]
    assert [f.rule for f in result.findings] == ["REQ004"]


def test_a_capture_name_two_logs_share_tells_no_session(tmp_path):
    result = check([_folder(tmp_path, "aaa.requests.jsonl", zst_twin=True)])
    assert ("unexplained", None) in _routed(result)
    assert "REQ004" in [f.rule for f in result.findings]


def test_a_folders_sessions_are_indexed_once_however_many_captures_it_holds(tmp_path, monkeypatch):
    """Routing looks a folder's sessions up by id, name and stem: built per capture, a seed-era folder
    of n logs, each with its own capture, cost n indexes of n sessions (time and memory grew as n^2)."""
    import invariants.gate.requests as requests_mod

    for name in ("aaa", "bbb", "ccc"):
        log = Log(name, era="late")
        log.clean_turn(1, header_reason="initial", capture=True)
        log.write(tmp_path / f"{name}.jsonl")
        log.write_requests(tmp_path / f"{name}.requests.jsonl", log.requests)
    built = []
    real = requests_mod._Local

    def counted(models):
        built.append(len(models))
        return real(models)

    monkeypatch.setattr(requests_mod, "_Local", counted)
    whole_folders(monkeypatch)  # the folder as one unit
    result = check([tmp_path])
    assert sorted(_routed(result)) == [("ok", "aaa"), ("ok", "bbb"), ("ok", "ccc")]
    assert built == [3]
