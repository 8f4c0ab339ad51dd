"""`inspector export --endpoint` against a real receiver: Arize Phoenix, started on loopback by the test.

The spans are sent over OTLP/HTTP through the OpenTelemetry SDK and read back
through Phoenix's REST API; they must be the spans of the OTLP/JSON file of
the same sessions (ids, parents, names, status, attributes, finding events).
Skipped with a reason when Phoenix or the otel extra is not installed
(`.ci/run` installs both).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from inspector.cli import main
from tests.conftest import SAMPLES, corpus_dir

pytestmark = pytest.mark.slow

STARTUP = 600  # seconds: Phoenix migrates its database and loads its app; slow on a busy two-core machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    pytest.importorskip("phoenix", reason="arize-phoenix is not installed (pip install arize-phoenix)")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otel extra is not installed")
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc_port = _free_port(), _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    }
    log = open(work / "phoenix.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "phoenix.server.main", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP
        while True:
            if proc.poll() is not None:
                pytest.fail("Phoenix exited: " + (work / "phoenix.log").read_text(errors="replace")[-2000:])
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"Phoenix did not come up in {STARTUP} s")
            time.sleep(1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _corpus_log() -> Path:
    root = corpus_dir("upstream-late-era")
    for path in sorted(root.rglob("*.jsonl")):
        if path.name == "requests.jsonl":
            continue
        text = path.read_text(encoding="utf-8")
        if '"tool/call"' in text and '"cacheReadTokens"' in text:
            return path
    pytest.skip("no corpus session with tool calls and cache usage")


def _flat(attrs: list[dict]) -> dict:
    out = {}
    for kv in attrs:
        ((kind, v),) = kv["value"].items()
        out[kv["key"]] = int(v) if kind == "intValue" else v
    return out


def _read_back(base: str, trace_id: str, expected: int) -> list[dict]:
    """The trace's spans once Phoenix has stored all of them (it inserts in the background)."""
    deadline = time.monotonic() + 120
    while True:
        got = _get(f"{base}/v1/projects/default/spans?trace_id={trace_id}&limit=1000")["data"]
        if len(got) >= expected or time.monotonic() > deadline:
            return got
        time.sleep(1)


def test_export_to_phoenix_and_read_the_spans_back(phoenix, capsys, tmp_path):
    logs = [_corpus_log(), SAMPLES / "capture-divergence.jsonl"]  # the sample log has error findings
    out = tmp_path / "t.jsonl"
    assert main(["export", *map(str, logs), "-o", str(out), "--isolated"]) == 0
    code = main(["export", *map(str, logs), "--endpoint", phoenix, "--isolated"])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert "sent 2 session(s)" in err
    requests = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(requests) == 2
    for request in requests:
        spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
        trace_id = spans[0]["traceId"]
        got = _read_back(phoenix, trace_id, len(spans))
        assert len(got) == len(spans)
        theirs = {s["context"]["span_id"]: s for s in got}
        assert set(theirs) == {s["spanId"] for s in spans}
        for mine in spans:
            back = theirs[mine["spanId"]]
            assert back["context"]["trace_id"] == trace_id
            assert back["name"] == mine["name"]
            assert (back.get("parent_id") or None) == mine.get("parentSpanId")
            assert back["status_code"] == ("ERROR" if mine["status"].get("code") == 2 else "UNSET")
            attrs = _flat(mine.get("attributes", []))
            for key in (
                "gen_ai.operation.name",
                "gen_ai.request.model",
                "gen_ai.usage.input_tokens",
                "gen_ai.usage.output_tokens",
                "gen_ai.usage.cache_read.input_tokens",
                "gen_ai.tool.name",
                "gen_ai.tool.call.id",
            ):
                if key in attrs:
                    assert back["attributes"][key] == attrs[key], key
            mine_events = [_flat(e.get("attributes", []))["inspector.finding.rule"] for e in mine.get("events", [])]
            back_events = [e["attributes"]["inspector.finding.rule"] for e in back.get("events", [])]
            assert sorted(back_events) == sorted(mine_events)
        names = [s["name"] for s in got]
        assert any(n.startswith("chat ") for n in names) and any(n.startswith("execute_tool ") for n in names)
    divergent = requests[1]["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert any(e for s in divergent for e in s.get("events", [])), "the sample log's findings were exported"
