"""Every rule fires on a log built to break it, and stays quiet on its twin that does not.

Cases are a table: rule code -> (build a violating log, build the clean twin).
Each builder gets a fresh ``Log`` and may return capture lines.
"""

from __future__ import annotations

import copy

import pytest

from invariants.model.registry import RULES
from tests.support.logs import SEED_HEADER, SEED_TOOLS, Log


def _base(log: Log, reason: str = "initial") -> None:
    log.clean_turn(1, "hi", header_reason=reason)


def _req(log: Log, turn: int, step: int, log_length: int, **changes) -> dict:
    """A capture line for a request the log explains, then edited by ``changes``."""
    import tempfile
    from pathlib import Path

    from invariants.read.source import LogSource
    from invariants.replay.session import replay

    with tempfile.TemporaryDirectory() as d:
        path = log.write(Path(d) / "tmp.jsonl")
        model = replay(LogSource(path, path.parent))
        step_state = model.step_for(turn, step)
        request = copy.deepcopy(model.rebuild_request(step_state, log_length).request)
    for key, value in changes.items():
        if value is None:
            request.pop(key, None)
        else:
            request[key] = value
    return {
        "sessionId": log.header["id"],
        "logLength": log_length,
        "turn": turn,
        "step": step,
        "loopBuilt": True,
        "request": request,
    }


# ---------------------------------------------------------------- builders
def evt001(log, bad):
    _base(log)
    log.turn_start(2)
    log.add("todo/write", {"todos": []}, **({"surfaceOp": "append"} if bad else {}))
    log.turn_end(2)


def evt002(log, bad):
    log.turn_start(1)
    log.user("hi")
    if bad:
        log.add("user/message", {"content": [{"type": "text", "text": "x"}], "source": {"kind": "user"}})
    log.simple_step(1, 1, header_reason="initial")
    log.turn_end(1)


def _sourced_message(log, refs):
    """One step whose assistant/message names ``refs(c)`` as its sources, ``c`` the seq of its one chunk."""
    log.turn_start(1)
    log.user("hi")
    log.step_start(1, 1)
    log.snapshot()
    c = log.chunk(1, 1)
    log.assistant(1, 1, [{"type": "text", "text": "hi"}], refs(c))
    log.step_end(1, 1)
    log.turn_end(1)


def evt003(log, bad):
    _sourced_message(log, lambda c: [c + 5] if bad else [c])


def _compaction(log, start, end, sources):
    log.add("compact/start", {"turn": 2})
    s = log.add(
        "compact/summary",
        {
            "summary": "sum",
            "shadowedRange": {"start": start, "end": end},
            "shadowedSeqs": [],
            "shadowedTokenCount": 1,
            "model": "m1",
        },
    )
    log.add(
        "user/message",
        {"content": [{"type": "text", "text": "summary"}], "source": {"kind": "plugin", "plugin": "compact"}},
        sourceEventSeqs=sorted(set([s - 1, s, *sources])),
        surfaceOp={"op": "replace", "start": start, "end": end},
    )
    log.add("compact/end", {"turn": 2})


def evt004(log, bad):
    _base(log)
    log.turn_start(2)
    _compaction(log, 5 if bad else 1, 1 if bad else 5, [1, 5])
    log.simple_step(2, 1)
    log.turn_end(2)


def evt005(log, bad):
    _base(log)
    log.turn_start(2)
    _compaction(log, 1, 5, [1] if bad else [1, 5])
    log.simple_step(2, 1)
    log.turn_end(2)


def evt006(log, bad):
    _base(log)
    log.turn_start(3 if bad else 2)
    log.user("again")
    log.simple_step(3 if bad else 2, 1)
    log.turn_end(3 if bad else 2)


def evt007(log, bad):
    log.turn_start(1)
    log.user("hi")
    log.simple_step(1, 1, header_reason="initial")
    log.simple_step(1, 3 if bad else 2)
    log.turn_end(1)


def evt008(log, bad):
    log.turn_start(1)
    log.user("hi")
    log.step_start(1, 1)
    log.snapshot()
    c = log.chunk(1, 1)
    log.assistant(1, 2 if bad else 1, [{"type": "text", "text": "x"}], [c])
    log.step_end(1, 1)
    log.turn_end(1)


def evt009(log, bad):
    log.turn_start(1)
    log.user("hi")
    log.step_start(1, 1)
    log.snapshot()
    c = log.chunk(1, 1)
    log.assistant(1, 1, [{"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}], [c])
    call = log.tool_call(1, 1, "c1")
    log.tool_result(1, 1, "c2" if bad else "c1", call)
    log.step_end(1, 1)
    log.turn_end(1)


def evt009_repair_exempt(log, bad):
    """The synthetic crash-repair result needs no pending call."""
    log.turn_start(1)
    log.user("hi")
    log.step_start(1, 1)
    log.snapshot()
    log.chunk(1, 1)
    log.tool_result(
        1, 1, "c9", None, is_error=True, error={"name": "InterruptedError", "code": "other" if bad else "interrupted"}
    )
    log.step_end(1, 1)
    log.add("turn/end", {"turn": 1, "reason": {"kind": "interrupted"}})


def evt010(log, bad):
    _base(log)
    if bad:
        log.add("todo/write", {"todos": []})


def evt011(log, bad):
    log.turn_start(1)
    log.user("hi")
    log.add("step/start", {"turn": "1" if bad else 1, "step": 1})
    log.snapshot()
    log.step_end(1, 1)
    log.turn_end(1)


def hdr001(log, bad):
    log.turn_start(1)
    log.user("hi")
    log.step_start(1, 1)
    if bad:
        log.delta({"config": {"model": "m2"}})
    log.snapshot()
    log.chunk(1, 1)
    log.step_end(1, 1)
    log.turn_end(1)


def _delta_turn(log, payload, turn=2):
    log.turn_start(turn)
    log.user("next")
    log.step_start(turn, 1)
    log.delta(payload)
    c = log.chunk(turn, 1)
    log.assistant(turn, 1, [{"type": "text", "text": "ok"}], [c])
    log.step_end(turn, 1)
    log.turn_end(turn)


def hdr002(log, bad):
    _base(log)
    _delta_turn(log, {"tools": {"added": [], "removed": ["grep" if bad else "bash"], "changed": []}})


def hdr002_system(log, bad):
    _base(log)
    _delta_turn(log, {"system": {"keepStart": 2, "keepEnd": 2 if bad else 1, "insert": ["X"]}})


def hdr003(log, bad):
    _base(log)
    # Line A is unchanged, so the harness's diff keeps it: keepStart 1.
    arm = (
        {"keepStart": 0, "keepEnd": 0, "insert": ["line A", "line X", "line C"]}
        if bad
        else {"keepStart": 1, "keepEnd": 1, "insert": ["line X"]}
    )
    _delta_turn(log, {"system": arm})


def hdr004(log, bad):
    _base(log)
    _delta_turn(log, {"config": {"model": "m1"}} if bad else {"config": {"model": "m2"}})


def hdr005(log, bad):
    log.clean_turn(1, header_reason="initial", header={**SEED_HEADER, "tools": []} if bad else SEED_HEADER)


def hdr006(log, bad):
    _base(log)
    _delta_turn(
        log, {"system": "a new prompt"} if bad else {"system": {"keepStart": 0, "keepEnd": 0, "insert": ["new"]}}
    )


def hdr007(log, bad):
    _base(log)
    log.clean_turn(2, header_reason="initial" if bad else "resume")


def hdr008(log, bad):
    log.clean_turn(1, header_reason="resume" if bad else "initial")


def hdr009(log, bad):
    # A forked child: its own first request must anchor with resume.
    log.header["parentSession"] = "parent"
    _base(log)
    log.header["seedLength"] = log.seq
    if bad:
        _delta_turn(log, {"config": {"model": "m2"}})
    else:
        log.clean_turn(2, header_reason="resume")


def hdr010(log, bad):
    log.turn_start(1)
    log.user("hi")
    log.step_start(1, 1)
    if not bad:
        log.snapshot()
    c = log.chunk(1, 1)
    if bad:
        log.snapshot()
    log.assistant(1, 1, [{"type": "text", "text": "x"}], [c])
    log.step_end(1, 1)
    log.turn_end(1)


def hdr011(log, bad):
    _base(log)
    log.clean_turn(2, header_reason="refresh" if bad else "fallback", header={**SEED_HEADER, "config": {"model": "m9"}})


def hdr013(log, bad):
    _base(log)
    header = {**SEED_HEADER, "config": {"model": "m9"}} if bad else {**SEED_HEADER, "tools": list(reversed(SEED_TOOLS))}
    log.clean_turn(2, header_reason="fallback", header=header)


def hdr014(log, bad):
    _base(log)
    if bad:
        log.clean_turn(2, header_reason="fallback", header={**SEED_HEADER, "tools": list(reversed(SEED_TOOLS))})
    else:
        _delta_turn(log, {"config": {"model": "m2"}})


def req001(log, bad):
    log.turn_start(1)
    log.user("hi")
    log.simple_step(1, 1, header_reason=None if bad else "initial")
    log.turn_end(1)


def req002(log, bad):
    log.turn_start(1)
    log.user("hi")
    log.simple_step(1, 1, header_reason="initial")
    log.turn_end(1)
    good = _req(log, 1, 1, 4)
    return [{**good, "logLength": 2 if bad else 4}]


def req003(log, bad):
    log.turn_start(1)
    log.user("hi")
    log.simple_step(1, 1, header_reason="initial")
    log.turn_end(1)
    good = _req(log, 1, 1, 4)
    return [{**good, "logLength": 3 if bad else 4}]


def req004(log, bad):
    _base(log)
    good = _req(log, 1, 1, 4)
    return [{**good, "sessionId": "nobody" if bad else log.header["id"]}]


def req005(log, bad):
    _base(log)
    good = _req(log, 1, 1, 4)
    return [{**good, "logLength": 999 if bad else 4}]


def div001(log, bad):
    _base(log)
    good = _req(log, 1, 1, 4)
    if bad:
        good["request"]["messages"][0]["content"][0]["text"] = "edited"
    return [good]


def div002(log, bad):
    _base(log)
    good = _req(log, 1, 1, 4)
    if bad:
        m = good["request"]["messages"][0]
        good["request"]["messages"][0] = {"content": m["content"], "role": m["role"]}
    return [good]


def div010(log, bad):
    _base(log)
    return [_req(log, 1, 1, 4, temperature=0.7 if bad else None)]


def div011(log, bad):
    _base(log)
    return [_req(log, 1, 1, 4, topP=0.9 if bad else None)]


def pfx001(log, bad):
    log.clean_turn(
        1, header_reason="initial", header={**SEED_HEADER, "messagePrefix": [{"role": "user", "content": "P1"}]}
    )
    if bad:
        _delta_turn(log, {"messagePrefix": [{"role": "user", "content": "P2"}]})
    else:
        log.clean_turn(
            2, header_reason="resume", header={**SEED_HEADER, "messagePrefix": [{"role": "user", "content": "P2"}]}
        )


def pfx002(log, bad):
    log.clean_turn(
        1, header_reason="initial", header={**SEED_HEADER, "messagePrefix": [{"role": "user", "content": "P1"}]}
    )
    log.clean_turn(
        2,
        header_reason="resume",
        header={**SEED_HEADER, "messagePrefix": [{"role": "user", "content": "P2" if bad else "P1"}]},
    )


def pfx003(log, bad):
    _base(log)
    log.clean_turn(2, header_reason="resume", header={**SEED_HEADER, "system": "changed"} if bad else SEED_HEADER)


def log006(log, bad):
    _base(log)
    log.turn_start(2)
    log.user("more")
    if not bad:
        log.simple_step(2, 1)
        log.turn_end(2)


def log014(log, bad):
    _base(log)
    log.turn_start(2)
    log.user("more")
    log.add("turn/end", {"turn": 2, "reason": {"kind": "interrupted" if bad else "completed"}})


CASES = {
    "EVT001": evt001,
    "EVT002": evt002,
    "EVT003": evt003,
    "EVT004": evt004,
    "EVT005": evt005,
    "EVT006": evt006,
    "EVT007": evt007,
    "EVT008": evt008,
    "EVT009": evt009,
    "EVT009/repair": evt009_repair_exempt,
    "EVT010": evt010,
    "EVT011": evt011,
    "HDR001": hdr001,
    "HDR002": hdr002,
    "HDR002/system": hdr002_system,
    "HDR003": hdr003,
    "HDR004": hdr004,
    "HDR005": hdr005,
    "HDR006": hdr006,
    "HDR007": hdr007,
    "HDR008": hdr008,
    "HDR009": hdr009,
    "HDR010": hdr010,
    "HDR011": hdr011,
    "HDR013": hdr013,
    "HDR014": hdr014,
    "REQ001": req001,
    "REQ002": req002,
    "REQ003": req003,
    "REQ004": req004,
    "REQ005": req005,
    "DIV001": div001,
    "DIV002": div002,
    "DIV010": div010,
    "DIV011": div011,
    "PFX001": pfx001,
    "PFX002": pfx002,
    "PFX003": pfx003,
    "LOG006": log006,
    "LOG014": log014,
}

# Rules whose cases live in other test files (integrity of raw bytes, late era, forks).
TESTED_ELSEWHERE = {
    "LOG001": "test_load.py",
    "LOG002": "test_load.py",
    "LOG003": "test_load.py",
    "LOG004": "test_load.py",
    "LOG005": "test_load.py",
    "LOG008": "test_load.py",
    "LOG013": "test_load.py",
    "LOG007": "test_late_era*.py",
    "LOG009": "test_load.py",
    "LOG010": "test_load.py",
    "LOG011": "test_late_era*.py",
    "LOG012": "test_load.py",
    "HDR012": "test_late_era*.py",
    "LOG015": "test_late_era*.py",
    "LOG016": "test_sqlite_backend.py",
    "LOG017": "test_late_era*.py",
    "LOG018": "test_projected.py",
    "LOG019": "test_unreadable.py",
    "HDR015": "test_late_era*.py",
    "FRK001": "test_forks.py",
    "FRK002": "test_forks.py",
    "FRK003": "test_forks.py",
    "FRK004": "test_forks.py",
    "RSM001": "test_cli_check.py",
    "EVT012": "test_event_contract.py",
    "EVT013": "test_value_checks.py",
    "TOK001": "test_tokens.py",
    "CTX001": "test_tokens.py",
    "CTX002": "test_tokens.py",
    "CTX003": "test_tokens.py",
    "CTX004": "test_tokens.py",
}


def _run(check_log, build, bad):
    log = Log()
    requests = build(log, bad)
    return check_log(log, requests)


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule_fires_on_violation(check_log, case):
    code = case.split("/")[0]
    result = _run(check_log, CASES[case], True)
    fired = [f for f in result.findings if f.rule == code]
    assert fired, f"{code} did not fire; got {[(f.rule, f.message) for f in result.findings]}"
    rule = RULES[code]
    assert all(f.category == rule.category and f.severity == rule.severity for f in fired)
    assert all(f.file and f.session for f in fired)


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule_quiet_on_clean_twin(check_log, case):
    code = case.split("/")[0]
    result = _run(check_log, CASES[case], False)
    assert [f for f in result.findings if f.rule == code] == []
    assert [f for f in result.findings if f.severity == "error"] == [], [(f.rule, f.message) for f in result.findings]


def test_every_rule_has_cases():
    covered = {c.split("/")[0] for c in CASES} | set(TESTED_ELSEWHERE)
    assert set(RULES) - covered == set(), "rules without a firing/non-firing test"


def test_step_findings_carry_turn_step_and_event_findings_carry_seq(check_log):
    log = Log()
    requests = div001(log, True)
    result = check_log(log, requests)
    (f,) = [f for f in result.findings if f.rule == "DIV001"]
    assert (f.turn, f.step) == (1, 1)
    assert f.seq == 1  # the user/message that produced the diverging message
    assert f.path == "messages[0].content[0].text"
    assert f.detail["region"] == "derived"
    assert f.detail["expected"] == '"hi"' and f.detail["recorded"] == '"edited"'
    assert "values_changed" in f.detail["deepdiff"]


def test_all_findings_are_reported_not_only_the_first(check_log):
    log = Log()
    log.turn_start(1)
    log.user("hi")
    log.step_start(1, 1)
    log.snapshot()
    log.add("todo/write", {"todos": []}, surfaceOp="append")
    log.add("todo/write", {"todos": []}, sourceEventSeqs=[0])
    log.step_end(1, 2)
    log.turn_end(1)
    codes = [f.rule for f in check_log(log).findings]
    assert codes.count("EVT001") == 2 and "EVT008" in codes


@pytest.mark.parametrize(
    "refs, fires",
    [
        (lambda c: [c - 1, c], False),  # a run of earlier seqs (the header snapshot and the chunk)
        (lambda c: [c, c - 1], False),  # out of order, still each once and earlier
        (lambda c: [c, c], True),  # a duplicate
        (lambda c: [c, c + 1], True),  # c + 1 is the message's own seq
        (lambda c: [-1, 0], True),
        (lambda c: [0, True], True),  # a boolean where a seq belongs (True == 1 in Python)
        (lambda c: [c - 1, float(c)], True),
        (lambda c: [float(c - 1), c], True),
        (lambda c: [c - 1, "x"], True),  # not a number: the fast test must not compare it with a seq
        (lambda c: [c - 1, {"seq": c}], True),
    ],
)
def test_source_seqs_must_name_earlier_events_once(check_log, refs, fires):
    log = Log()
    _sourced_message(log, refs)
    assert any(f.rule == "EVT003" for f in check_log(log, None).findings) is fires


# ---------------------------------------------------------------- a rule is a row
def test_every_rule_is_raised_somewhere_and_every_code_raised_is_a_rule():
    from inspector.commands.rules import raise_sites

    sites = raise_sites()
    assert set(sites) == set(RULES)
    assert sites["DIV002"] == ("invariants.replay.compare:_order_difference",)
    assert "invariants.replay.fold:_Replay._finish" in sites["LOG006"]
    assert all(":" in s and s.startswith("invariants.") for where in sites.values() for s in where)


def test_what_the_ui_and_follow_mode_know_of_a_rule_is_a_field_of_its_row():
    from inspector.screens.state import finding_tab
    from invariants.gate.follow import END_OF_LOG_RULES, POST_FOLD_RULES
    from invariants.model.registry import FIRES, TABS, make_finding, rules_where
    from invariants.read.load import DAMAGE
    from invariants.replay.fold import HEADER_LOSS_RULES
    from invariants.rules.head_header import RELAXED_IN_FIXTURES

    for code, rule in RULES.items():
        assert rule.tab in TABS and rule.fires in FIRES, code
        assert finding_tab(make_finding(code, "m")) == rule.tab
    assert END_OF_LOG_RULES == rules_where(fires="at-end") and "LOG006" in END_OF_LOG_RULES
    assert POST_FOLD_RULES == rules_where(fires="after-fold") and "LOG011" in POST_FOLD_RULES
    assert HEADER_LOSS_RULES == {c for c, r in RULES.items() if r.loses_header} and "REQ001" in HEADER_LOSS_RULES
    assert RELAXED_IN_FIXTURES == {c for c, r in RULES.items() if r.relaxed_in_fixtures}
    assert DAMAGE == {c for c, r in RULES.items() if r.unreadable_line} and "LOG001" in DAMAGE


def _code_lists(root) -> list[tuple[str, str, list[str]]]:
    """Every literal tuple, list or set of rule codes and every ``startswith`` of a code prefix
    in ``invariants/`` and ``inspector/`` (the registry aside): (module, function, codes)."""
    import ast
    import re

    code, prefix = re.compile(r"[A-Z]{3}[0-9]{3}"), re.compile(r"[A-Z]{3}")
    out = []
    for package in ("invariants", "inspector"):
        for path in sorted((root / package).rglob("*.py")):
            module = ".".join(path.relative_to(root).with_suffix("").parts)
            if module == "invariants.model.registry":
                continue

            def visit(node, where, module=module):
                for child in ast.iter_child_nodes(node):
                    inner = where
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        inner = f"{where}.{child.name}" if where else child.name
                    elif isinstance(child, (ast.Tuple, ast.List, ast.Set)):
                        codes = [
                            e.value
                            for e in child.elts
                            if isinstance(e, ast.Constant) and isinstance(e.value, str) and code.fullmatch(e.value)
                        ]
                        if codes:
                            out.append((module, where, codes))
                    elif isinstance(child, ast.Call) and getattr(child.func, "attr", None) == "startswith":
                        arg = child.args[0] if child.args else None
                        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and prefix.fullmatch(arg.value):
                            out.append((module, where, [arg.value]))
                    visit(child, inner, module)

            visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return out


def test_no_rule_code_list_outside_the_registry_and_the_place_that_raises_it():
    from pathlib import Path

    from inspector.commands.rules import raise_sites

    sites = raise_sites()
    stray = [
        (module, where, codes)
        for module, where, codes in _code_lists(Path(__file__).resolve().parents[2])
        if not all(f"{module}:{where}" in sites.get(c, ()) for c in codes)
    ]
    assert stray == [], "a rule's facts belong in its registry row (invariants/model/registry.py)"
