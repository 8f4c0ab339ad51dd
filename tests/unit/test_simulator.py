"""The simulator's output: byte-stable, shaped like the harness's logs, and self-consistent.

The recomputation below re-derives every request from the *log* (surface fold,
seed-era projection, header fold up to ``logLength``) and compares it with the
capture the simulator wrote from its own conversation, so two independent paths
have to agree.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import orjson
import pytest
import zstandard

from invariants.read.zstdio import FrameError, iter_frames
from invariants.replay.header_codec import apply_delta, canonical, diff_header, header_equals
from invariants.simulate.large import WORDS_UTF8, generate_large
from invariants.simulate.sample import Sample
from invariants.simulate.samples import build_samples, write_samples
from invariants.simulate.seed_era import sample_clean, sample_repaired_resume, sample_torn_tail

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
SURFACE = {"user/message", "assistant/message", "tool/result", "context/message", "steering/message"}
FAULTY_CAPTURES = {"capture-divergence.jsonl", "capture-key-order.jsonl"}


@pytest.fixture(scope="module")
def built() -> list[Sample]:
    return build_samples()


@pytest.fixture(scope="module")
def expected() -> dict:
    return json.loads((SAMPLES / "EXPECTED.json").read_text(encoding="utf-8"))


def _logs(samples: list[Sample]) -> dict[str, bytes]:
    return {
        rel: data
        for s in samples
        for rel, data in s.files.items()
        if rel.endswith(".jsonl") and not rel.endswith("requests.jsonl")
    }


def _capture_for(rel: str, files: dict[str, bytes]) -> bytes:
    folder = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
    return files.get(folder + "requests.jsonl") or files[rel[: -len(".jsonl")] + ".requests.jsonl"]


def _parse(data: bytes) -> tuple[dict, list[dict]]:
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    else:  # torn tail: drop the fragment
        lines.pop()
    return orjson.loads(lines[0]), [orjson.loads(line) for line in lines[1:]]


# --------------------------------------------------------------------------- independent recomputation


def _tag(tag: str, data: dict) -> list:
    kind = json.dumps(data["source"]["kind"])
    return [{"type": "text", "text": f"<{tag} source={kind}>"}, *data["content"], {"type": "text", "text": f"</{tag}>"}]


def project(event: dict) -> dict | None:
    """LOG-FORMAT.md §6, seed era."""
    kind, data = event["type"], event["data"]
    if kind == "user/message":
        return {"role": "user", "content": data["content"]}
    if kind == "assistant/message":
        return {"role": "assistant", "content": data["content"]} if data["content"] else None
    if kind == "tool/result":
        return {
            "role": "user",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": data["callId"],
                    "content": data["content"],
                    "isError": data["isError"],
                }
            ],
        }
    if kind == "context/message":
        return {"role": "user", "content": _tag("context", data)}
    if kind == "steering/message":
        return {"role": "user", "content": _tag("steering", data)}
    return None


def derive(events: list[dict]) -> list[dict]:
    nodes: list[dict] = []
    for event in events:
        op = event.get("surfaceOp")
        if op == "append":
            nodes.append(event)
        elif isinstance(op, dict):
            seqs = [n["seq"] for n in nodes]
            i, j = seqs.index(op["start"]), seqs.index(op["end"])
            assert i <= j
            nodes[i : j + 1] = [event]
    return [m for m in map(project, nodes) if m is not None]


def fold(events: list[dict]) -> dict | None:
    header = None
    for event in events:
        if event["type"] == "request/header":
            header = canonical(event["data"]["header"])
        elif event["type"] == "request/header-delta":
            header = apply_delta(header, event["data"]).header
    return header


def expected_request(events: list[dict], log_length: int) -> dict:
    before = [e for e in events if e["seq"] < log_length]
    boundary = max(e["seq"] for e in before if e["type"] == "step/start")
    header = fold(before)
    request: dict = {"model": header["config"]["model"]}
    for key in ("system", "tools"):
        if key in header:
            request[key] = header[key]
    request["messages"] = [
        *header.get("messagePrefix", []),
        *derive(events[:boundary]),
        *header.get("messageSuffix", []),
    ]
    for key in ("temperature", "maxTokens", "stop"):
        if key in header["config"]:
            request[key] = header["config"][key]
    return request


# --------------------------------------------------------------------------- tests


SAMPLES_LIBZSTD = (1, 5, 7)
"""The libzstd the committed ``.zstd`` samples were compressed with: another release compresses the same
frames to other bytes, so under it their frames are compared decompressed."""


def _whole_frames(data: bytes) -> list[bytes]:
    """The decompressed frames of a zstd log, up to a torn last frame (whose cut depends on the compressor)."""
    frames: list[bytes] = []
    try:
        frames.extend(iter_frames(io.BytesIO(data)))
    except FrameError as exc:
        assert exc.kind == "torn", exc
        return frames[: exc.frame_index]
    return frames


def test_regeneration_is_byte_identical_to_committed_samples(tmp_path: Path) -> None:
    write_samples(tmp_path)
    fresh = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    committed = {p.relative_to(SAMPLES).as_posix(): p.read_bytes() for p in SAMPLES.rglob("*") if p.is_file()}
    assert sorted(fresh) == sorted(committed)
    for rel, data in fresh.items():
        if rel.endswith(".zstd") and zstandard.ZSTD_VERSION != SAMPLES_LIBZSTD:
            assert _whole_frames(data) == _whole_frames(committed[rel]), f"{rel}: its frames differ"
            continue
        assert data == committed[rel], f"{rel} differs from the committed sample; rerun the simulator CLI"


def test_every_log_is_listed_in_expected(built: list[Sample], expected: dict) -> None:
    # late/ holds HEAD-era storage forms (zstd, SQLite members): tests/test_samples.py lists those
    assert sorted(_logs(built)) == sorted(k for k in expected if not k.startswith("late/"))
    for faults in expected.values():
        for fault in faults:
            assert fault["severity"] in ("error", "warning", "info") and fault["kind"]


def test_clean_capture_messages_equal_a_recomputation_from_the_log(built: list[Sample]) -> None:
    files = {rel: data for s in built for rel, data in s.files.items()}
    checked = 0
    for rel, data in _logs(built).items():
        if rel in FAULTY_CAPTURES:
            continue
        header, events = _parse(data)
        for line in _capture_for(rel, files).splitlines():
            capture = orjson.loads(line)
            if capture["sessionId"] != header["id"] or not capture["loopBuilt"]:
                continue
            assert orjson.dumps(capture["request"]) == orjson.dumps(expected_request(events, capture["logLength"])), rel
            checked += 1
    assert checked > 60


def test_clean_case_matches_a_hand_built_conversation() -> None:
    sample = sample_clean()
    captures = [orjson.loads(line) for line in sample.files["clean-multi-turn.requests.jsonl"].splitlines()]
    last = captures[-1]["request"]["messages"]
    assert [m["role"] for m in last] == [
        "user",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert last[0]["content"][0]["text"].startswith("<system-reminder>")
    assert last[1] == {
        "role": "user",
        "content": [{"type": "text", "text": "How many Python files are there under src/? Count them with bash."}],
    }
    assert last[3]["content"][0]["type"] == "tool-result" and last[3]["content"][0]["isError"] is False
    assert [c["logLength"] for c in captures] == sorted(c["logLength"] for c in captures)


@pytest.mark.parametrize("rel", ["capture-divergence.jsonl", "capture-key-order.jsonl"])
def test_faulty_captures_differ_only_where_expected(built: list[Sample], expected: dict, rel: str) -> None:
    files = {r: d for s in built for r, d in s.files.items()}
    _, events = _parse(files[rel])
    faulty = {f["captureLine"] for f in expected[rel]}
    for number, line in enumerate(_capture_for(rel, files).splitlines(), start=1):
        capture = orjson.loads(line)
        want = expected_request(events, capture["logLength"])
        same_bytes = orjson.dumps(capture["request"]) == orjson.dumps(want)
        assert same_bytes == (number not in faulty), (rel, number)
        if rel == "capture-key-order.jsonl" and number in faulty:
            assert json.loads(line)["request"] == want  # equal as values, different bytes


def test_header_events_follow_the_writer_rules(built: list[Sample]) -> None:
    for rel, data in _logs(built).items():
        session, events = _parse(data)
        seed = session.get("seedLength", 0)
        headers = [e for e in events if e["type"].startswith("request/header")]
        snapshots = [e for e in headers if e["type"] == "request/header"]
        assert snapshots and snapshots[0]["data"]["reason"] == "initial", rel
        assert all(e["data"]["reason"] != "initial" for e in snapshots[1:]), rel
        if seed:
            own = [e for e in snapshots if e["seq"] >= seed]
            assert own[0]["data"]["reason"] == "resume", rel
        state = None
        for event in events:
            if event["type"] == "request/header":
                state = canonical(event["data"]["header"])
            elif event["type"] == "request/header-delta":
                result = apply_delta(state, event["data"])
                if rel != "corrupt-delta.jsonl":
                    assert not result.problems, (rel, event["seq"], result.problems)
                state = result.header
        for event in headers:  # every header event sits right after a step/start or inside its step prologue
            assert events[event["seq"] - 1]["type"] == "step/start", (rel, event["seq"])


def test_deltas_round_trip_and_fallbacks_could_not(built: list[Sample]) -> None:
    _, events = _parse(_logs(built)["fallback-tool-reorder.jsonl"])
    fold_before = None
    for event in events:
        if event["type"] == "request/header" and event["data"]["reason"] == "fallback":
            new = canonical(event["data"]["header"])
            delta = diff_header(fold_before, new)
            assert not header_equals(apply_delta(fold_before, delta).header, new)
        if event["type"] == "request/header":
            fold_before = canonical(event["data"]["header"])
        elif event["type"] == "request/header-delta":
            fold_before = apply_delta(fold_before, event["data"]).header
    kinds = [e["type"] for e in events if e["type"].startswith("request/header")]
    assert kinds == ["request/header", "request/header", "request/header", "request/header-delta"]


def test_every_delta_arm_is_exercised(built: list[Sample]) -> None:
    arms: set[str] = set()
    for data in _logs(built).values():
        for event in _parse(data)[1]:
            if event["type"] == "request/header-delta":
                arms.update(event["data"])
                tools = event["data"].get("tools")
                if tools:
                    arms.update(f"tools.{k}" for k, v in tools.items() if v)
    assert {
        "system",
        "config",
        "messagePrefix",
        "messageSuffix",
        "tools.added",
        "tools.removed",
        "tools.changed",
    } <= arms


def test_fork_child_seed_equals_parent_prefix(built: list[Sample]) -> None:
    fork = next(s for s in built if s.name == "fork")
    logs = {rel: data for rel, data in fork.files.items() if not rel.endswith("requests.jsonl")}
    headers = {rel: orjson.loads(data.split(b"\n", 1)[0]) for rel, data in logs.items()}
    child_rel = next(rel for rel, h in headers.items() if "parentSession" in h)
    parent_rel = next(rel for rel in logs if rel != child_rel)
    child, parent = headers[child_rel], headers[parent_rel]
    assert child["parentSession"] == parent["id"] and child["cwd"] == parent["cwd"]
    assert list(child) == ["type", "version", "id", "createdAt", "cwd", "parentSession", "seedLength"]
    n = child["seedLength"]
    child_lines = logs[child_rel].split(b"\n")[1:]
    parent_lines = logs[parent_rel].split(b"\n")[1:]
    assert child_lines[:n] == parent_lines[:n]
    assert orjson.loads(child_lines[n - 1])["type"] == "turn/end"
    assert child["createdAt"] > orjson.loads(child_lines[n - 1])["time"]
    own = [orjson.loads(line) for line in child_lines[n:] if line]
    first_header = next(e for e in own if e["type"].startswith("request/header"))
    assert first_header["data"]["reason"] == "resume"
    sessions = [orjson.loads(line)["sessionId"] for line in fork.files["fork/requests.jsonl"].splitlines()]
    assert set(sessions) == {parent["id"], child["id"]}


def test_envelopes_seqs_and_key_order(built: list[Sample]) -> None:
    for rel, data in _logs(built).items():
        _, events = _parse(data)
        assert [e["seq"] for e in events] == list(range(len(events))), rel
        for event in events:
            keys = list(event)
            assert keys[:4] == ["type", "seq", "time", "data"], (rel, event["seq"])
            if event["type"] not in SURFACE:
                assert keys == ["type", "seq", "time", "data"], (rel, event["seq"])
                continue
            assert "surfaceOp" in keys
            synthetic = event["type"] == "tool/result" and event["data"].get("error", {}).get("code") == "interrupted"
            if "sourceEventSeqs" in keys:
                order = ["surfaceOp", "sourceEventSeqs"] if synthetic else ["sourceEventSeqs", "surfaceOp"]
                assert keys[4:] == order, (rel, event["seq"])
                assert all(s < event["seq"] for s in event["sourceEventSeqs"])


def test_compaction_shape(built: list[Sample]) -> None:
    _, events = _parse(_logs(built)["compaction.jsonl"])
    replaces = [e for e in events if isinstance(e.get("surfaceOp"), dict)]
    assert len(replaces) == 2
    for event in replaces:
        start, summary = events[event["seq"] - 2], events[event["seq"] - 1]
        assert start["type"] == "compact/start" and summary["type"] == "compact/summary"
        assert event["sourceEventSeqs"] == [start["seq"], summary["seq"], *summary["data"]["shadowedSeqs"]]
        assert events[event["seq"] + 1]["type"] == "compact/end"
        assert events[event["seq"] + 2]["type"] == "step/start"
    assert replaces[0]["seq"] in replaces[1]["sourceEventSeqs"]  # the second compaction shadows the first summary


def test_torn_and_repaired_tails() -> None:
    torn = sample_torn_tail().files["torn-tail.jsonl"]
    assert not torn.endswith(b"\n")
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(torn.rsplit(b"\n", 1)[1])
    repaired = sample_repaired_resume().files["repaired-resume.jsonl"]
    events = [orjson.loads(line) for line in repaired.splitlines()[1:]]
    closers = [
        e
        for e in events
        if e["type"] == "tool/result"
        and e["data"].get("isError")
        and e["data"].get("error", {}).get("code") == "interrupted"
    ]
    assert len(closers) == 2 and "sourceEventSeqs" in closers[0] and "sourceEventSeqs" not in closers[1]
    end = next(e for e in events if e["type"] == "turn/end" and e["data"]["reason"]["kind"] == "interrupted")
    assert {e["time"] for e in closers} == {end["time"]}


def test_generate_large_streams_a_consistent_log(tmp_path: Path) -> None:
    log, capture = tmp_path / "big.jsonl", tmp_path / "big.requests.jsonl"
    stats = generate_large(log, capture, events=6_000, steps=60, seed=7)
    assert stats["events"] >= 6_000 and stats["steps"] >= 60
    header, events = _parse(log.read_bytes())
    assert len(events) == stats["events"]
    kinds = {e["type"] for e in events}
    assert {"request/header-delta", "compact/summary", "tool/result"} <= kinds
    reasons = [e["data"]["reason"] for e in events if e["type"] == "request/header"]
    assert reasons[0] == "initial" and "resume" in reasons
    lines = capture.read_bytes().splitlines()
    for line in lines[:: max(1, len(lines) // 15)]:
        capture_line = orjson.loads(line)
        want = expected_request(events, capture_line["logLength"])
        assert orjson.dumps(capture_line["request"]) == orjson.dumps(want)
    again = tmp_path / "again.jsonl"
    generate_large(again, None, events=6_000, steps=60, seed=7)
    assert again.read_bytes() == log.read_bytes()


def test_generate_large_compacts_every_n_turns_when_asked(tmp_path: Path) -> None:
    """``compact_every``: a compaction opens every n-th turn (the benchmark's second log shape), whatever the
    surface's size, and the log and its capture still agree."""
    log, capture = tmp_path / "turns.jsonl", tmp_path / "turns.requests.jsonl"
    stats = generate_large(log, capture, events=6_000, steps=60, seed=3, resume_every=7, compact_every=4)
    _, events = _parse(log.read_bytes())
    turn = 0
    compacted = []
    for e in events:
        if e["type"] == "turn/start":
            turn += 1
        elif e["type"] == "compact/summary":
            compacted.append(turn)
    assert compacted == list(range(5, stats["turns"] + 1, 4))
    reasons = [e["data"]["reason"] for e in events if e["type"] == "request/header"]
    assert reasons.count("resume") == (stats["turns"] - 1) // 7
    lines = capture.read_bytes().splitlines()
    for line in lines[:: max(1, len(lines) // 10)]:
        capture_line = orjson.loads(line)
        assert orjson.dumps(capture_line["request"]) == orjson.dumps(
            expected_request(events, capture_line["logLength"])
        )


def test_generate_large_writes_text_that_is_not_ascii_when_asked(tmp_path: Path) -> None:
    """``vocabulary=WORDS_UTF8`` (the benchmark's ``text`` shape): the prose is UTF-8 written as is, in the
    log and its capture, which still agree; the default vocabulary stays ASCII."""
    log, capture = tmp_path / "text.jsonl", tmp_path / "text.requests.jsonl"
    generate_large(log, capture, events=3_000, steps=30, seed=5, vocabulary=WORDS_UTF8)
    data = log.read_bytes()
    assert not data.isascii() and not capture.read_bytes().isascii()
    assert "缓存".encode() in data or "café".encode() in data
    _, events = _parse(data)
    lines = capture.read_bytes().splitlines()
    for line in lines[:: max(1, len(lines) // 8)]:
        capture_line = orjson.loads(line)
        assert orjson.dumps(capture_line["request"]) == orjson.dumps(
            expected_request(events, capture_line["logLength"])
        )
    generate_large(tmp_path / "ascii.jsonl", None, events=3_000, steps=30, seed=5)
    assert (tmp_path / "ascii.jsonl").read_bytes().isascii()
