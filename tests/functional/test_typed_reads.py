"""The typed fast paths (chunk runs, capture lines, byte-identical requests) change no finding.

Each check runs twice in-process: once with the typed paths from the first
byte (their thresholds at 0), once with them off (and capture lines never split
around their request); the JSON reports must be identical, for the samples and
for mutated logs and captures of every kind the fuzzer makes (damaged lines,
wrong types, deep nesting, invalid UTF-8...).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import orjson
import pytest

from invariants import check
from invariants.gate.report import report_json
from invariants.read import capture, load
from invariants.read.capture_splice import split_capture
from tests.support.fuzz_cases import random_case, write_case
from tests.support.fuzz_inputs import sample_seeds
from tests.support.fuzz_mutators import capture_mutate

ROOT = Path(__file__).resolve().parents[2]


def _read(path: Path) -> tuple[list, list]:
    """Every record of a capture file, and the findings about its lines."""
    findings: list = []
    return list(capture.iter_capture(path, findings)), findings


def _refuse_parsing(monkeypatch) -> None:
    """Any capture line the general reader is asked to parse fails the test: a proved line never is."""

    def refuse(data: bytes) -> None:
        raise AssertionError("a proved line was parsed")

    monkeypatch.setattr(capture, "parse_json", refuse)


def _report(target: Path, typed: bool, monkeypatch) -> bytes:
    monkeypatch.setattr(load, "TYPED_AFTER", 0 if typed else 10**12)
    monkeypatch.setattr(capture, "TYPED_AFTER", 0 if typed else 10**12)
    monkeypatch.setattr(capture, "split_capture", split_capture if typed else lambda data: None)
    doc = report_json(check([target]))
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2)


def test_samples_report_the_same_with_typed_reads(monkeypatch, tmp_path):
    target = tmp_path / "samples"
    shutil.copytree(ROOT / "sample_logs", target)
    assert _report(target, True, monkeypatch) == _report(target, False, monkeypatch)


@pytest.mark.parametrize("seed", range(60))
def test_mutated_cases_report_the_same_with_typed_reads(monkeypatch, tmp_path, seed):
    rng = random.Random(seed)
    seeds = sample_seeds()
    case, _ = random_case(rng, seeds)
    if rng.random() < 0.5:  # more damaged captures than the fuzzer's own mix
        with_capture = [s for s in seeds if s.capture is not None]
        s = rng.choice(with_capture)
        case.files = {
            s.log_name: s.log,
            s.log_name.replace(".jsonl", ".requests.jsonl"): capture_mutate(rng, s.capture),
        }
        case.target = s.log_name
    folder = tmp_path / "case"
    target = write_case(case, folder)
    assert _report(target, True, monkeypatch) == _report(target, False, monkeypatch)


def test_typed_capture_records_match_the_general_reader(monkeypatch, tmp_path):
    body = [
        b'{"sessionId":"s1","logLength":3,"turn":1,"step":1,"verdict":"ok","origin":"loop",'
        b'"request":{"messages":[{"role":"user"}],"x":1}}',
        b'{"test":"t","origin":"loop","request":{"messages":[]},"verdict":"ok","sessionId":"s1","turn":1}',
        b'{"logLength":18446744073709551616,"request":{"messages":[1e300]}}',
        b'{"time":1.5,"test":{"n":[1,2]},"loopBuilt":false,"request":{"messages":[],"model":"m"}}',
        b'{"origin":"llm.stream","request":{"messages":[{"a":1e999}]},"sessionId":"s\xc3\xa9"}',
        b'{"request":{"messages":[]},"sessionId":"\\ud800"}',
        b'{"request":{"messages":[]},"logLength":-1}',
        b'{"turn":' + b"1" + b"0" * 25 + b',"request":{"messages":[]}}',
        b'{"request":{"messages":' + b"[" * 600 + b"]" * 600 + b"}}",
        b'{"request":{"messages":[' + b"[" * 508 + b"]" * 508 + b"]}}",
    ]
    path = tmp_path / "requests.jsonl"
    path.write_bytes(b"\n".join(body) + b"\n")

    def read(typed: bool) -> tuple[list, list]:
        monkeypatch.setattr(capture, "TYPED_AFTER", 0 if typed else 10**12)
        records, findings = _read(path)
        split.append(sum(r.raw_fields is not None for r in records))
        fields = ("line", "session_id", "session_file", "log_length", "turn", "step", "loop_built", "time")
        rows = [([getattr(r, f) for f in fields], list(r.extra.items()), r.request) for r in records]
        return rows, [f.to_json() for f in findings]

    split: list[int] = []
    typed, general = read(True), read(False)
    assert typed == general
    assert len(general[0]) == 7 and len(general[1]) == 3  # two bad logLengths and the nesting are reported
    assert split == [4, 0]  # the typed reader split the plain lines, left the odd ones to the general one


def test_message_bytes_are_reused_only_for_the_same_objects():
    from invariants.replay.compare import _reused

    m1, m2, m3 = (
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "b"},
    )
    encoded: list[dict] = []

    def encode(m: dict) -> bytes | None:
        encoded.append(m)
        return None if "n" in m else orjson.dumps(m)

    first = _reused(([], []), [m1, m2], encode)
    assert first is not None and first[1] == [orjson.dumps(m1), orjson.dumps(m2)]
    second = _reused(first, [m1, m3, m2], encode)
    assert second is not None and second[1] == [orjson.dumps(m) for m in (m1, m3, m2)]
    copy = dict(m1)
    third = _reused(second, [copy, m3], encode)  # an equal copy is not the same object
    assert third is not None and third[1] == [orjson.dumps(m1), orjson.dumps(m3)]
    # m1 was reused by the second call, its copy was not (nor m3 after it, at another place)
    assert list(map(id, encoded)) == list(map(id, [m1, m2, m3, m2, copy, m3]))
    assert _reused(third, [{"n": 1}], encode) is None  # one that cannot be encoded: the structural comparison decides


def test_a_long_message_repeated_at_its_place_is_scanned_for_depth_once(monkeypatch, tmp_path):
    from invariants.read import capture_typed

    shallow = b'{"role":"user","content":[' + b",".join([b'{"type":"text","text":"x"}'] * 60) + b"]}"
    other = shallow.replace(b'"x"', b'"y"')
    deep = b'{"role":"user","content":' + b"[" * 520 + b"]" * 520 + b"}"
    body = [
        b'{"request":{"messages":[' + shallow + b"]}}",
        b'{"request":{"messages":[' + shallow + b"," + other + b"]}}",
        b'{"request":{"messages":[' + shallow + b"," + deep + b"]}}",
        b'{"request":{"messages":[' + deep + b"," + other + b"]}}",
    ]
    path = tmp_path / "requests.jsonl"
    path.write_bytes(b"\n".join(body) + b"\n")
    scanned: list[int] = []
    real = capture_typed.too_deep
    monkeypatch.setattr(capture_typed, "too_deep", lambda data, limit: scanned.append(len(data)) or real(data, limit))
    monkeypatch.setattr(capture, "TYPED_AFTER", 0)
    typed = _read(path)
    monkeypatch.setattr(capture, "TYPED_AFTER", 10**12)
    general = _read(path)
    assert [r.line for r in typed[0]] == [r.line for r in general[0]] == [1, 2]
    assert [f.to_json() for f in typed[1]] == [f.to_json() for f in general[1]]
    assert [f.line for f in typed[1]] == [3, 4]  # both deep lines reported, the repeated message no shield
    # line 1 scans its message; line 2 only the new one; lines 3 and 4 the deep one (and nothing repeated)
    assert scanned == [len(shallow), len(other), len(deep), len(deep)]


def test_whitespace_between_recorded_messages_is_not_a_difference(monkeypatch, tmp_path):
    from msgspec import Raw, json

    shutil.copytree(ROOT / "sample_logs", tmp_path / "samples")
    log = tmp_path / "samples" / "clean-multi-turn.jsonl"
    cap = tmp_path / "samples" / "clean-multi-turn.requests.jsonl"
    lines = []
    for text in cap.read_bytes().splitlines():
        obj = json.decode(text, type=dict[str, Raw])
        request = json.decode(obj["request"], type=dict[str, Raw])
        items = json.decode(request["messages"], type=list[Raw])
        request["messages"] = Raw(b"[ " + b" ,\t".join(bytes(i) for i in items) + b" ]")
        obj["request"] = Raw(json.encode(request))
        lines.append(json.encode(obj))
    cap.write_bytes(b"\n".join(lines) + b"\n")
    monkeypatch.setattr(capture, "TYPED_AFTER", 0)
    result = check([log], keep_models=True)
    records = [r.recorded for r in result.requests if r.recorded is not None]
    assert records and all(r.status == "ok" for r in result.requests) and not result.findings
    assert all(r.raw_fields is None for r in records)  # decided byte for byte, item by item, unparsed
    assert _report(log, True, monkeypatch) == _report(log, False, monkeypatch)


@pytest.mark.parametrize("after, typed", [(150, [True, True, True]), (10**6, [False, False, False])])
def test_a_capture_file_larger_than_the_threshold_is_read_typed_from_its_first_line(
    monkeypatch, tmp_path, after, typed
):
    line = b'{"sessionId":"s1","logLength":3,"turn":1,"step":1,"request":{"messages":[{"role":"user"}]}}'
    path = tmp_path / "requests.jsonl"
    path.write_bytes(b"\n".join([line] * 3) + b"\n")  # each line under the threshold, the file over it
    monkeypatch.setattr(capture, "TYPED_AFTER", after)
    records, findings = _read(path)
    assert findings == [] and [r.raw_fields is not None for r in records] == typed


def test_a_capture_line_byte_for_byte_its_rebuilt_request_is_let_go_once_compared(monkeypatch, tmp_path):
    shutil.copytree(ROOT / "sample_logs", tmp_path / "samples")
    log = tmp_path / "samples" / "clean-multi-turn.jsonl"
    capture_lines = (tmp_path / "samples" / "clean-multi-turn.requests.jsonl").read_bytes().splitlines()
    monkeypatch.setattr(capture, "TYPED_AFTER", 0)
    result = check([log], keep_models=True)
    records = [r.recorded for r in result.requests if r.recorded is not None]
    assert records and all(r.status == "ok" for r in result.requests)
    for rec in records:
        assert rec.text is None and rec.raw_fields is None  # the line's bytes are not kept
        assert orjson.dumps(rec.request) == orjson.dumps(orjson.loads(capture_lines[rec.line - 1])["request"])


def test_a_request_the_log_explains_is_proved_by_its_bytes_and_never_parsed(monkeypatch, tmp_path):
    shutil.copytree(ROOT / "sample_logs", tmp_path / "samples")
    log = tmp_path / "samples" / "clean-multi-turn.jsonl"
    lines = (tmp_path / "samples" / "clean-multi-turn.requests.jsonl").read_bytes().splitlines()

    _refuse_parsing(monkeypatch)
    monkeypatch.setattr(capture, "TYPED_AFTER", 10**12)
    result = check([log], keep_models=True)
    records = [r.recorded for r in result.requests if r.recorded is not None]
    assert len(records) == len(lines) and all(r.status == "ok" for r in result.requests) and not result.findings
    for rec in records:
        assert rec.text is None and rec.raw_fields is None
        assert orjson.dumps(rec.request) == orjson.dumps(orjson.loads(lines[rec.line - 1])["request"])


def test_a_proof_is_a_value_the_check_takes_and_proving_changes_no_record(tmp_path):
    """``prove`` answers with a proof (or None) and leaves the record as it was; the reader gives
    the record its proved request, and the check takes the proof's step (no second rebuild)."""
    from invariants.gate.requests import RequestRouter
    from invariants.read.source import LogSource
    from invariants.replay.session import replay

    shutil.copytree(ROOT / "sample_logs", tmp_path / "samples")
    log = tmp_path / "samples" / "clean-multi-turn.jsonl"
    cap = tmp_path / "samples" / "clean-multi-turn.requests.jsonl"
    model = replay(LogSource(log, log.parent))
    router = RequestRouter([model], explicit=False)
    prove = router.prover(cap)
    line = cap.read_bytes().splitlines()[0]
    values, start, end = split_capture(line)
    rec = capture._recorded(str(cap), 1, values, text=line)
    proof = prove(rec, start, end)
    assert proof is not None and rec.text == line and rec.parsed is None and rec.proof is None
    assert orjson.dumps(proof.request) == line[start:end]
    request = line[start:end].replace(b'"role":"user"', b'"role":"usr"', 1)
    damaged = capture._recorded(str(cap), 1, values, text=line[:start] + request + line[end:])
    assert prove(damaged, start, end - 1) is None  # another request: no proof, read and compared as before

    found: list = []
    records = list(capture.iter_capture(cap, found, prove=prove))
    assert records and all(r.proof is not None and r.text is None for r in records)
    rebuilt = model.rebuild_request
    model.rebuild_request = None  # type: ignore[assignment]  # a check that rebuilt again would fail here
    try:
        checks, findings = router.check_all(cap, records)
    finally:
        model.rebuild_request = rebuilt  # type: ignore[method-assign]
    assert [c.status for c in checks] == ["ok"] * len(records) and not findings
    assert all(r.proof is None for r in records)  # taken by the check


@pytest.mark.parametrize(
    "damage, rules",
    [
        (lambda req: req.replace(b'"role":', b'"role"', 1), ["LOG013"]),  # not JSON: the readers say so
        (lambda req: req.replace(b'"role":"user"', b'"role":"usr"', 1), ["DIV001"]),  # JSON, another request
        (lambda req: req.replace(b'"messages":[', b'"messages": [', 1), []),  # the same request, other bytes
        (lambda req: req[:-1] + b',"x":1}', ["DIV011"]),  # a field the log has no account of
    ],
)
def test_a_request_its_bytes_do_not_prove_is_read_and_judged_as_before(monkeypatch, tmp_path, damage, rules):
    shutil.copytree(ROOT / "sample_logs", tmp_path / "samples")
    log = tmp_path / "samples" / "clean-multi-turn.jsonl"
    cap = tmp_path / "samples" / "clean-multi-turn.requests.jsonl"
    lines = cap.read_bytes().splitlines()
    split = split_capture(lines[1])
    assert split is not None
    _, start, end = split
    lines[1] = lines[1][:start] + damage(lines[1][start:end]) + lines[1][end:]
    cap.write_bytes(b"\n".join(lines) + b"\n")
    report = _report(log, True, monkeypatch)
    assert report == _report(log, False, monkeypatch)
    assert [f["rule"] for f in orjson.loads(report)["findings"]] == rules


CAPTURE_WRITERS = {
    "json.dumps": lambda obj: _json_dumps(obj, ", ", ": "),
    "spaced around colons": lambda obj: _json_dumps(obj, ",", " : "),
    "tabs": lambda obj: _json_dumps(obj, ",\t", ":\t"),
    "compact, CRLF line ends": lambda obj: _json_dumps(obj, ",", ":") + b"\r",
    "json.dumps, CRLF line ends": lambda obj: _json_dumps(obj, ", ", ": ") + b"\r",
}


def _json_dumps(obj: dict, item: str, key: str) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(item, key)).encode()


@pytest.mark.parametrize("writer", sorted(CAPTURE_WRITERS))
def test_a_capture_another_writer_wrote_is_proved_by_its_bytes_and_never_parsed(monkeypatch, tmp_path, writer):
    """Python's ``json.dumps`` puts a space after every comma and colon, a Windows tool ends lines
    with CRLF; the same requests are proved without parsing them, and the check says what it says
    of the harness's compact capture."""
    shutil.copytree(ROOT / "sample_logs", tmp_path / "samples")
    log = tmp_path / "samples" / "clean-multi-turn.jsonl"
    cap = tmp_path / "samples" / "clean-multi-turn.requests.jsonl"
    compact = _report(log, True, monkeypatch)
    keys = capture.capture_keys(cap)
    lines = [CAPTURE_WRITERS[writer](orjson.loads(line)) for line in cap.read_bytes().splitlines()]
    cap.write_bytes(b"\n".join(lines) + b"\n")
    assert _report(log, True, monkeypatch) == compact

    _refuse_parsing(monkeypatch)
    monkeypatch.setattr(capture, "TYPED_AFTER", 10**12)
    assert capture.capture_keys(cap) == keys  # what the plan routes by, read as the check reads it
    result = check([log], keep_models=True)
    records = [r.recorded for r in result.requests if r.recorded is not None]
    assert len(records) == len(lines) and all(r.status == "ok" for r in result.requests) and not result.findings


def test_a_spaced_capture_line_the_log_does_not_explain_is_read_as_written(monkeypatch, tmp_path):
    """Only a proof uses the line without its whitespace: a request that differs is read from the line
    as written, so what the check says of it does not depend on the proof having been tried."""
    shutil.copytree(ROOT / "sample_logs", tmp_path / "samples")
    log = tmp_path / "samples" / "clean-multi-turn.jsonl"
    cap = tmp_path / "samples" / "clean-multi-turn.requests.jsonl"
    lines = [_json_dumps(orjson.loads(line), ", ", ": ") for line in cap.read_bytes().splitlines()]
    lines[1] = lines[1].replace(b'"role": "user"', b'"role": "usr"', 1)
    lines[2] = lines[2][:-1]  # not JSON
    cap.write_bytes(b"\n".join(lines) + b"\n")
    typed = _report(log, True, monkeypatch)
    assert b"DIV001" in typed and b"LOG013" in typed
    assert typed == _report(log, False, monkeypatch)


def _python_default(obj: dict) -> bytes:
    return json.dumps(obj).encode()  # spaced, every character that is not ASCII escaped


@pytest.mark.parametrize(
    "escape",
    [
        pytest.param(_python_default, id="json.dumps defaults"),
        pytest.param(lambda obj: orjson.dumps(obj).replace(b"/", b"\\/"), id="every slash escaped, as PHP does"),
    ],
)
def test_a_capture_whose_strings_are_escaped_another_way_is_proved_without_the_general_reader(
    monkeypatch, tmp_path, escape
):
    """The rebuilt request's bytes are orjson's; a writer may escape the same strings otherwise
    (``\\u00e9``, ``\\/``).  Such a request is proved by its value's encoding, never read by the
    general reader, and the check says what it says of the capture as the harness writes it."""
    from invariants.simulate.large import WORDS_UTF8, generate_large

    log, cap = tmp_path / "s.jsonl", tmp_path / "s.requests.jsonl"
    generate_large(log, cap, events=400, steps=4, seed=3, vocabulary=WORDS_UTF8)
    lines = cap.read_bytes().splitlines()
    assert any(b"/" in line for line in lines) and any(not line.isascii() for line in lines)
    harness = _report(log, True, monkeypatch)
    cap.write_bytes(b"".join(escape(orjson.loads(line)) + b"\n" for line in lines))
    assert _report(log, True, monkeypatch) == harness

    _refuse_parsing(monkeypatch)
    monkeypatch.setattr(capture, "TYPED_AFTER", 10**12)
    result = check([log], keep_models=True)
    assert len(result.requests) == len(lines) and all(r.status == "ok" for r in result.requests)
