"""`inspector export`: sessions as OpenTelemetry traces (GenAI semantic conventions) in OTLP/JSON.

Expectations are computed from the log files themselves (step/start events,
their times, usage records, tool calls) and from `inspector check --format
json`, not from the exporter's own data structures.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from inspector.cli import main
from tests.conftest import SAMPLES, corpus_dir

CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


def _export(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["export", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _value(v: dict):
    ((kind, x),) = v.items()
    if kind == "intValue":
        return int(x)
    if kind == "arrayValue":
        return [_value(e) for e in x.get("values", [])]
    return x


def _attrs(obj: dict) -> dict:
    return {kv["key"]: _value(kv["value"]) for kv in obj.get("attributes", [])}


def _spans(request: dict) -> list[dict]:
    (rs,) = request["resourceSpans"]
    (ss,) = rs["scopeSpans"]
    return ss["spans"]


def _events(path: Path) -> list[dict]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # a torn tail
        if obj.get("type") == "text-chunks" or "seq0" in obj:
            continue  # packed chunk rows: the tests below read plain logs
        out.append(obj)
    return out


def _check_findings(capsys, path: Path) -> list[dict]:
    main(["check", str(path), "--format", "json", "--no-cache", "--isolated"])
    out, _ = capsys.readouterr()
    return json.loads(out)["findings"]


def _assert_well_formed(request: dict) -> tuple[str, list[dict]]:
    """One trace; hex ids; string nanosecond times; every parent inside the trace; one root."""
    spans = _spans(request)
    trace_ids = {s["traceId"] for s in spans}
    assert len(trace_ids) == 1
    (trace_id,) = trace_ids
    assert len(trace_id) == 32 and int(trace_id, 16)
    ids = {s["spanId"] for s in spans}
    assert len(ids) == len(spans), "span ids are unique"
    for s in spans:
        assert len(s["spanId"]) == 16 and int(s["spanId"], 16)
        assert isinstance(s["startTimeUnixNano"], str) and isinstance(s["endTimeUnixNano"], str)
        assert int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]) >= 0
        assert s["kind"] in (1, 3)
        assert s.get("parentSpanId", "") == "" or s["parentSpanId"] in ids
    roots = [s for s in spans if not s.get("parentSpanId")]
    assert len(roots) == 1 and roots[0]["name"].startswith("invoke_agent")
    return trace_id, spans


def _check_session(capsys, log: Path, request: dict, findings: list[dict]) -> None:
    """The export of one plain-JSONL session against the log itself and the check's findings."""
    _, spans = _assert_well_formed(request)
    by_id = {s["spanId"]: s for s in spans}
    (root,) = [s for s in spans if not s.get("parentSpanId")]
    events = _events(log)
    header = json.loads(log.read_text(encoding="utf-8").splitlines()[0])
    assert _attrs(root)["gen_ai.conversation.id"] == header["id"]
    assert _attrs(root)["gen_ai.operation.name"] == "invoke_agent"

    # one chat span per step/start, opened at that event's time, a child of a turn span
    starts = [e for e in events if e["type"] == "step/start"]
    chats = [s for s in spans if s["name"].startswith("chat")]
    assert len(chats) == len(starts)
    chat_at = {_attrs(s)["dsh.step.seq"]: s for s in chats}
    for e in starts:
        span = chat_at[e["seq"]]
        a = _attrs(span)
        assert span["kind"] == 3  # CLIENT
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"]
        assert int(span["startTimeUnixNano"]) == e["time"] * 1_000_000
        assert (a["dsh.turn"], a["dsh.step"]) == (e["data"]["turn"], e["data"]["step"])
        assert by_id[span["parentSpanId"]]["name"] == "turn"
        if "gen_ai.request.model" in a:
            assert span["name"] == f"chat {a['gen_ai.request.model']}"

    # usage: the last usage record of each step, in the conventions' terms (input includes cache reads)
    usage: dict[int, dict] = {}
    step_seq = None
    for e in events:
        if e["type"] == "step/start":
            step_seq = e["seq"]
        elif e["type"] == "step/end":
            step_seq = None
        elif step_seq is not None:
            d = e["data"]
            u = d.get("usage") if e["type"] == "assistant/message" else (d.get("chunk") or {}).get("usage")
            if isinstance(u, dict):
                usage[step_seq] = u
    for seq, u in usage.items():
        a = _attrs(chat_at[seq])
        assert a["gen_ai.usage.input_tokens"] == u["inputTokens"] + u.get("cacheReadTokens", 0)
        assert a["gen_ai.usage.output_tokens"] == u["outputTokens"]
        if "cacheReadTokens" in u:
            assert a["gen_ai.usage.cache_read.input_tokens"] == u["cacheReadTokens"]

    # one execute_tool span per tool/call, a child of the turn, with the call's id and name
    calls = [e for e in events if e["type"] == "tool/call"]
    tools = {_attrs(s)["dsh.tool.call_seq"]: s for s in spans if s["name"].startswith("execute_tool")}
    assert sorted(tools) == [e["seq"] for e in calls]
    for e in calls:
        span, a = tools[e["seq"]], _attrs(tools[e["seq"]])
        assert span["name"] == f"execute_tool {e['data']['name']}"
        assert a["gen_ai.tool.name"] == e["data"]["name"] and a["gen_ai.tool.call.id"] == e["data"]["callId"]
        assert int(span["startTimeUnixNano"]) == e["time"] * 1_000_000
        assert by_id[span["parentSpanId"]]["name"] == "turn"

    # one span event per finding the check reports, the error ones on an ERROR span
    mine = [f for f in findings if f["session"] == header["id"]]
    got = [(s, ev) for s in spans for ev in s.get("events", []) if ev["name"] == "inspector.finding"]
    assert Counter(_attrs(ev)["inspector.finding.rule"] for _, ev in got) == Counter(f["rule"] for f in mine)
    for s, ev in got:
        a = _attrs(ev)
        if a["inspector.finding.severity"] == "error":
            assert s["status"]["code"] == 2 and root["status"]["code"] == 2
    assert Counter(_attrs(ev).get("inspector.finding.path") for _, ev in got) == Counter(f["path"] for f in mine)

    # no content without --content
    for s in spans:
        assert not CONTENT_KEYS & set(_attrs(s))


def test_sample_logs_one_trace_per_session(capsys, tmp_path):
    out = tmp_path / "traces.jsonl"
    code, stdout, _ = _export(capsys, str(SAMPLES), "--output", str(out), "--isolated")
    assert code == 0 and stdout == ""
    requests = _lines(out)
    findings = _check_findings(capsys, SAMPLES)
    sessions = {(f["file"], f["session"]) for f in findings}
    assert len(requests) == 22  # the sample logs hold 22 sessions
    trace_ids = [_assert_well_formed(r)[0] for r in requests]
    assert len(set(trace_ids)) == len(requests)
    files = {_attrs(_spans(r)[0])["dsh.session.file"]: r for r in requests}
    assert {f for f, _ in sessions} <= set(files)
    for name in ("capture-divergence.jsonl", "clean-multi-turn.jsonl", "torn-tail.jsonl", "corrupt-delta.jsonl"):
        log = SAMPLES / name
        key = next(k for k in files if k.endswith("/" + name))
        _check_session(capsys, log, files[key], [f for f in findings if f["file"] == key])


def test_a_re_export_is_the_same_trace(capsys, tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert _export(capsys, str(SAMPLES), "-o", str(a), "--isolated")[0] == 0
    assert _export(capsys, str(SAMPLES), "-o", str(b), "--isolated")[0] == 0
    assert a.read_bytes() == b.read_bytes()


def test_content_only_when_asked(capsys, tmp_path):
    log = SAMPLES / "capture-divergence.jsonl"
    user_text = next(
        b["text"]
        for e in _events(log)
        if e["type"] == "user/message"
        for b in e["data"]["content"]
        if b.get("type") == "text"
    )
    code, plain, _ = _export(capsys, str(log), "--isolated")
    assert code == 0 and user_text not in plain
    assert not any(k in plain for k in CONTENT_KEYS)
    code, full, _ = _export(capsys, str(log), "--isolated", "--content")
    assert code == 0
    spans = _spans(json.loads(full))
    chats = [_attrs(s) for s in spans if s["name"].startswith("chat")]
    inputs = json.loads(chats[0]["gen_ai.input.messages"])
    assert {"role": "user", "parts": [{"type": "text", "content": user_text}]} in inputs
    assert all(json.loads(c["gen_ai.output.messages"])[0]["role"] == "assistant" for c in chats)
    tools = [_attrs(s) for s in spans if s["name"].startswith("execute_tool")]
    assert tools and all("gen_ai.tool.call.arguments" in t and "gen_ai.tool.call.result" in t for t in tools)


def _corpus_session(pred) -> Path:
    root = corpus_dir("upstream-late-era")
    for path in sorted(root.rglob("*.jsonl")):
        if path.name == "requests.jsonl":
            continue
        text = path.read_text(encoding="utf-8")
        if pred(text):
            return path
    pytest.skip("no corpus session of the kind wanted")


@pytest.mark.corpus
def test_corpus_session_exports_steps_usage_tools_and_findings(capsys, tmp_path):
    log = _corpus_session(lambda t: '"cacheReadTokens"' in t and '"tool/call"' in t and '"seq0"' not in t)
    out = tmp_path / "t.jsonl"
    assert _export(capsys, str(log), "-o", str(out), "--isolated")[0] == 0
    (request,) = _lines(out)
    findings = _check_findings(capsys, log)
    _check_session(capsys, log, request, findings)
    chats = [_attrs(s) for s in _spans(request) if s["name"].startswith("chat")]
    assert any("gen_ai.usage.cache_read.input_tokens" in a for a in chats)
    assert all("gen_ai.request.model" in a for a in chats)


@pytest.mark.corpus
def test_corpus_folder_one_trace_per_session(capsys, tmp_path):
    folder = corpus_dir("upstream-late-era") / "context__agent-instructions__agent-instructions"
    if not folder.is_dir():
        pytest.skip(f"{folder} not in this corpus")
    out = tmp_path / "t.jsonl"
    assert _export(capsys, str(folder), "-o", str(out), "--isolated")[0] == 0
    logs = [p for p in folder.rglob("*.jsonl") if p.name != "requests.jsonl"]
    requests = _lines(out)
    assert len(requests) == len(logs)
    assert len({_assert_well_formed(r)[0] for r in requests}) == len(logs)
    by_file = {Path(_attrs(_spans(r)[0])["dsh.session.file"]).name: r for r in requests}
    findings = _check_findings(capsys, folder)
    for log in logs:
        if '"seq0"' not in log.read_text(encoding="utf-8"):
            _check_session(capsys, log, by_file[log.name], [f for f in findings if f["file"].endswith(log.name)])


def test_writer_refuses_a_link_and_an_input_and_says_so_in_one_line(capsys, tmp_path):
    log = SAMPLES / "clean-multi-turn.jsonl"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    link = tmp_path / "out.jsonl"
    link.symlink_to(victim)
    code, _, err = _export(capsys, str(log), "-o", str(link))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "link" in err
    assert victim.read_text(encoding="utf-8") == "keep me" and link.is_symlink()
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(log.read_bytes())
    code, _, err = _export(capsys, str(copy), "-o", str(copy))
    assert code == 2 and "input" in err and copy.read_bytes() == log.read_bytes()
    code, _, err = _export(capsys, str(log), "-o", str(tmp_path / "missing" / "out.jsonl"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.jsonl", "out.jsonl", "victim.txt"]


def test_writer_replaces_the_target_whole(capsys, tmp_path):
    out = tmp_path / "t.jsonl"
    out.write_text("old\n", encoding="utf-8")
    os.chmod(out, 0o640)
    assert _export(capsys, str(SAMPLES / "clean-multi-turn.jsonl"), "-o", str(out))[0] == 0
    (request,) = _lines(out)
    assert _spans(request)[0]["name"] == "invoke_agent"
    assert os.stat(out).st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]


def test_the_sdk_encodes_the_same_request(capsys):
    """The spans handed to the OpenTelemetry SDK encode (protobuf) to the request the file holds."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.common", reason="the otel extra is not installed")
    import base64

    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from inspector.otlp_send import readable_spans
    from invariants import check
    from invariants.analysis.otlp import export_request
    from invariants.analysis.trace import session_trace

    result = check(str(SAMPLES / "capture-divergence.jsonl"), keep_models=True)
    (model,) = result.models
    trace = session_trace(model, result.findings)
    ours = export_request(trace)
    theirs = MessageToDict(encode_spans(readable_spans(trace)), use_integers_for_enums=True)

    def hexify(obj):
        if isinstance(obj, dict):
            out = {}
            for k, v in obj.items():
                if k in ("traceId", "spanId", "parentSpanId"):
                    out[k] = base64.b64decode(v).hex()
                elif k != "flags":  # the SDK also sets the span flags' is-remote bits
                    out[k] = hexify(v)
            return out
        if isinstance(obj, list):
            return [hexify(x) for x in obj]
        return obj

    assert hexify(theirs) == ours


def test_hostile_values_export_and_encode(capsys, tmp_path):
    """Times out of range, a lone surrogate, a non-integer turn: the export and the SDK's protobuf take them."""
    lines = [
        '{"type":"session","version":0,"id":"h\\ud800","createdAt":"soon"}',
        '{"type":"turn/start","seq":0,"time":"x","data":{"turn":"one"}}',
        '{"type":"step/start","seq":1,"time":-5,"data":{"turn":1,"step":1}}',
        '{"type":"request/header","seq":2,"time":9007199254740991,'
        '"data":{"header":{"config":{"model":"m\\udc00","maxTokens":99999999999999999999}},"reason":"initial"}}',
        '{"type":"tool/call","seq":3,"time":-3,"data":{"turn":1,"step":1,"callId":"c","name":"t\\ud800",'
        '"arguments":"{}"}}',
        '{"type":"tool/result","seq":4,"time":9,"data":{"turn":1,"step":1,"callId":"c","content":[],"isError":true,'
        '"error":{"code":5}}}',
    ]
    log = tmp_path / "h.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "t.jsonl"
    code, _, err = _export(capsys, str(log), "-o", str(out), "--content", "--isolated")
    assert code == 0, err
    (request,) = _lines(out)
    _, spans = _assert_well_formed(request)
    assert max(int(s["endTimeUnixNano"]) for s in spans) < 1 << 64
    assert any(s["name"] == "execute_tool t\ufffd" for s in spans)
    pytest.importorskip("opentelemetry.exporter.otlp.proto.common", reason="the otel extra is not installed")
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from inspector.otlp_send import readable_spans
    from invariants import check
    from invariants.analysis.trace import session_trace

    result = check(str(log), keep_models=True)
    (model,) = result.models
    assert encode_spans(readable_spans(session_trace(model, result.findings, content=True))).SerializeToString()
