"""The seed-era sample sessions, each a scripted :class:`~invariants.simulate.recorder.SessionRecorder` run.

Each sample gives its files and the findings a checker must report on them;
``python -m invariants.simulate OUTDIR`` writes them, with the late-era ones, as ``sample_logs/``.
"""

from __future__ import annotations

import zlib
from typing import Any, Callable

import orjson

from invariants.simulate.content import (
    BASH,
    CWD,
    EDIT,
    GREP,
    MOCK_SYSTEM,
    READ,
    SKILL,
    SUBAGENT_FORK,
    SYSTEM,
    WRITE,
    _bash,
    skills_prefix,
)
from invariants.simulate.faults import (
    corrupt_delta_remove_unknown_tool,
    diverge_message_text,
    diverge_request_field,
    reorder_message_keys,
    tear_last_line,
)
from invariants.simulate.recorder import (
    CRASH,
    DEFAULT_MODEL,
    Compaction,
    Reply,
    SessionRecorder,
    SimulatedCrash,
    ToolCall,
    plugin,
    text_content,
)
from invariants.simulate.sample import Sample
from invariants.simulate.world import MemoryLines, World


def _seed(name: str) -> int:
    return zlib.crc32(name.encode())


def _single(name: str, **kwargs: Any) -> tuple[World, SessionRecorder]:
    world = World(_seed(name))
    rec = SessionRecorder(
        world, MemoryLines(), MemoryLines(), session_id=world.session_id(), session_file=f"{name}.jsonl", **kwargs
    )
    return world, rec


def _files(name: str, rec: SessionRecorder) -> dict[str, bytes]:
    return {f"{name}.jsonl": rec.log.getvalue(), f"{name}.requests.jsonl": rec.capture.getvalue()}


def _mock_turn(rec: SessionRecorder, prompt: str, answer: str) -> None:
    rec.user_turn(prompt)
    rec.step(Reply(text=answer))
    rec.end_turn()


def _script_clean(rec: SessionRecorder) -> None:
    """Three turns: a bash call, two parallel reads, an edit and a failing test run."""
    rec.start_instance(prefix=skills_prefix([("release-notes", "Draft release notes from the git log.")]))
    rec.user_turn("How many Python files are there under src/? Count them with bash.")
    rec.step(
        Reply(
            reasoning="The user wants the number of Python files in src. I will list them and count lines.",
            calls=[_bash("ls src/*.py | wc -l", "Count Python files in src", "3\n")],
        )
    )
    rec.step(Reply(reasoning="The count came back as 3.", text="There are 3 Python files under src/."))
    rec.end_turn()
    rec.user_turn("Read src/app.py and src/util.py and tell me what util provides.")
    rec.step(
        Reply(
            reasoning="Two independent reads; I can ask for both at once.",
            calls=[
                ToolCall(
                    "read", {"file_path": "src/app.py"}, "1\tfrom util import slugify\n2\tprint(slugify('A B'))\n"
                ),
                ToolCall(
                    "read",
                    {"file_path": "src/util.py"},
                    "1\tdef slugify(text):\n2\t    return text.lower().replace(' ', '-')\n",
                ),
            ],
        )
    )
    rec.step(
        Reply(
            text="util.py provides `slugify`, which lowercases text and turns spaces into dashes; app.py prints a slug."
        )
    )
    rec.end_turn()
    rec.user_turn("Give slugify a docstring and run the tests.")
    rec.step(
        Reply(
            reasoning="Edit the function, then run pytest.",
            calls=[
                ToolCall(
                    "edit",
                    {
                        "file_path": "src/util.py",
                        "old_string": "def slugify(text):\n",
                        "new_string": 'def slugify(text):\n    """Lowercase text and join its words with dashes."""\n',
                    },
                    "Edited src/util.py (1 replacement).",
                )
            ],
        )
    )
    rec.step(
        Reply(
            calls=[
                _bash(
                    "python -m pytest -q",
                    "Run the test suite",
                    "F.\nFAILED tests/test_util.py::test_unicode - AssertionError\n",
                    code=1,
                )
            ]
        )
    )
    rec.step(
        Reply(
            reasoning="One failure, unrelated to the docstring: it is about unicode input.",
            text="The docstring is in. One test fails (`test_unicode`), and it fails without my change too.",
        )
    )
    rec.end_turn()


def sample_clean() -> Sample:
    name = "clean-multi-turn"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH, READ, EDIT, SKILL])
    _script_clean(rec)
    return Sample(
        name,
        "clean three-turn session: reasoning, bash, two parallel reads, an edit, a failing "
        "test run; skills-catalog messagePrefix",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_steering() -> Sample:
    name = "steering-injection"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH, GREP], chunk_style="mock")
    rec.start_instance()
    rec.user_turn("Find every TODO in the repository.", context=("project uses tabs", plugin("hooks-claude")))
    rec.step(
        Reply(
            text="Searching.",
            calls=[ToolCall("grep", {"pattern": "TODO", "path": "."}, "src/app.py:3: # TODO: handle errors\n")],
        ),
        context_after=[("grep skipped 2 binary files", plugin("native-guard"))],
        steer_after=["actually, only look in tests/"],
    )
    rec.step(Reply(calls=[ToolCall("grep", {"pattern": "TODO", "path": "tests"}, "(no matches)\n")]))
    rec.step(Reply(text="There are no TODOs under tests/."))
    rec.end_turn()
    rec.inject_idle("file changed: src/app.py", plugin("watcher"))
    rec.user_turn("Write a long design note about the error handling.")
    rec.step(
        Reply(
            calls=[ToolCall("bash", {"command": "cat docs/errors.md", "description": "Show the error doc"})],
            finish="max-tokens",
        )
    )
    rec.end_turn()
    rec.user_turn("Keep it short then: one sentence.")
    rec.step(
        Reply(text="Errors are raised as typed exceptions and reported once, at the top level."),
        steer_before=[("keep going: answer the question", plugin("hooks-codex"))],
    )
    rec.end_turn()
    return Sample(
        name,
        "steering after tool results and before a step, prompt-submit and post-execute "
        "context/messages, an idle injection turn, a max-tokens step whose only block was a "
        "dropped tool call (empty-content assistant/message)",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_delta_system() -> Sample:
    name = "delta-system"
    _, rec = _single(name, system=MOCK_SYSTEM, model="mock", tools=[BASH], chunk_style="mock")
    rec.start_instance()
    _mock_turn(rec, "turn 1", "ok 1")
    rec.system = MOCK_SYSTEM + "\n\nAn extra section appended to the system prompt."
    _mock_turn(rec, "turn 2: a section is appended", "ok 2")
    rec.system = rec.system.replace("simulated persona", "simulated persona, revised")
    _mock_turn(rec, "turn 3: a middle line changes", "ok 3")
    rec.system = rec.system.split("\n\nAn extra")[0]
    _mock_turn(rec, "turn 4: the section is removed", "ok 4")
    rec.system = None
    _mock_turn(rec, "turn 5: no system prompt at all", "ok 5")
    rec.system = MOCK_SYSTEM
    _mock_turn(rec, "turn 6: the system prompt is back", "ok 6")
    return Sample(
        name,
        "system-prompt deltas: append a section, change a middle line, remove the section, drop the prompt, restore it",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_delta_tools() -> Sample:
    name = "delta-tools"
    _, rec = _single(name, system=MOCK_SYSTEM, model="mock", tools=[BASH, READ, WRITE], chunk_style="mock")
    rec.start_instance()
    rec.user_turn("turn 1 uses a tool")
    rec.step(Reply(text="reading", calls=[ToolCall("read", {"file_path": "a.txt"}, "1\thello\n")]))
    rec.step(Reply(text="a.txt says hello"))
    rec.end_turn()
    rec.tools = [BASH, READ, WRITE, GREP]
    _mock_turn(rec, "turn 2: grep is added", "ok 2")
    rec.tools = [BASH, READ, GREP]
    _mock_turn(rec, "turn 3: write is removed", "ok 3")
    rec.tools = [dict(BASH, description=BASH["description"] + " Output is cut to its last 2000 lines."), READ, GREP]
    _mock_turn(rec, "turn 4: bash is redescribed", "ok 4")
    rec.tools = [rec.tools[0], dict(GREP, description="Search file contents."), EDIT]
    _mock_turn(rec, "turn 5: read removed, grep changed, edit added", "ok 5")
    return Sample(
        name,
        "tools deltas: added, removed, changed, and all three arms at once",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_delta_config() -> Sample:
    name = "delta-config"
    _, rec = _single(name, system=MOCK_SYSTEM, model="mock", chunk_style="mock")
    rec.start_instance()
    _mock_turn(rec, "turn 1", "ok 1")
    rec.config = {"model": "mock", "temperature": 0.2}
    _mock_turn(rec, "turn 2: temperature set", "ok 2")
    rec.config = {"model": "mock-b", "temperature": 0.2, "maxTokens": 512, "stop": ["END"]}
    _mock_turn(rec, "turn 3: model switch, maxTokens and stop", "ok 3")
    rec.config = {"model": "mock-b", "temperature": 0.2, "maxTokens": 512, "stop": []}
    _mock_turn(rec, "turn 4: stop becomes an empty list, which differs from absent", "ok 4")
    rec.config = {"model": "mock"}
    _mock_turn(rec, "turn 5: back to the bare config", "ok 5")
    return Sample(
        name,
        "config deltas: temperature, model/maxTokens/stop, stop [] versus absent, back to bare",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_delta_prefix() -> Sample:
    name = "delta-message-prefix"
    _, rec = _single(name, system=MOCK_SYSTEM, model="mock", chunk_style="mock", framing="per-step")
    rec.start_instance()
    # A constant suffix marks the 17bd71e530 shape: without one the log would read as
    # d060c0dd4f, where the prefix is composed once per loop instance and cannot change.
    rec.request_suffix = [{"role": "user", "content": text_content("<state>clean worktree</state>")}]
    rec.request_prefix = [{"role": "user", "content": text_content("<reminder>catalog: alpha</reminder>")}]
    _mock_turn(rec, "turn 1", "ok 1")
    rec.request_prefix = rec.request_prefix + [
        {"role": "user", "content": text_content("<reminder>catalog: beta</reminder>")}
    ]
    _mock_turn(rec, "turn 2: the prefix grows", "ok 2")
    rec.request_prefix = []
    _mock_turn(rec, "turn 3: the prefix is cleared", "ok 3")
    rec.request_prefix = [{"role": "user", "content": text_content("<reminder>catalog: gamma</reminder>")}]
    _mock_turn(rec, "turn 4: a new prefix", "ok 4")
    # Legal here: in the 17bd71e530 shape the prefix came from a per-step waterfall.
    return Sample(
        name,
        "messagePrefix deltas in the 17bd71e530 per-step shape, with a constant messageSuffix "
        "(prefix grows, is cleared with [], comes back)",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_prefix_unstable() -> Sample:
    name = "prefix-unstable"
    _, rec = _single(name, system=MOCK_SYSTEM, model="mock", chunk_style="mock")
    rec.start_instance([{"role": "user", "content": text_content("<reminder>skills: alpha</reminder>")}])
    _mock_turn(rec, "turn 1", "ok 1")
    # A plugin recomposes the prefix mid-instance: from ea4c10d753 on the prefix
    # is composed once per loop instance, so this is instability, not drift.
    assert rec.instance is not None
    rec.instance.prefix = [{"role": "user", "content": text_content("<reminder>skills: alpha, beta</reminder>")}]
    _mock_turn(rec, "turn 2: the prefix changed without a resume", "ok 2")
    changes = [
        {"kind": "prefix-changed-in-instance", "seq": e["seq"], "turn": turn, "severity": "error"}
        for turn, e in _prefix_deltas(rec)
    ]
    return Sample(
        name,
        "the session prefix changes inside one loop instance (a messagePrefix delta without a resume)",
        _files(name, rec),
        {f"{name}.jsonl": changes},
    )


def _prefix_deltas(rec: SessionRecorder) -> list[tuple[int, dict]]:
    """(turn, event) for every delta with a messagePrefix arm in an in-memory log."""
    out, turn = [], 0
    for event in map(orjson.loads, rec.log.lines[1:]):
        if event["type"] == "turn/start":
            turn = event["data"]["turn"]
        elif event["type"] == "request/header-delta" and "messagePrefix" in event["data"]:
            out.append((turn, event))
    return out


def sample_fallback() -> Sample:
    name = "fallback-tool-reorder"
    _, rec = _single(name, system=MOCK_SYSTEM, model="mock", tools=[BASH, READ, WRITE], chunk_style="mock")
    rec.start_instance()
    _mock_turn(rec, "turn 1", "ok 1")
    rec.tools = [WRITE, BASH, READ]
    _mock_turn(rec, "turn 2: the same tools, rotated", "ok 2")
    head = rec.seq
    rec.tools = [WRITE, GREP, BASH, READ]
    _mock_turn(rec, "turn 3: a tool inserted in the middle", "ok 3")
    rec.tools = [WRITE, GREP, BASH]
    _mock_turn(rec, "turn 4: a plain removal, which a delta can express", "ok 4")
    log = [orjson.loads(line) for line in rec.log.lines[1:]]
    fallbacks = [e["seq"] for e in log if e["type"] == "request/header" and e["data"]["reason"] == "fallback"]
    assert len(fallbacks) == 2 and fallbacks[1] > head
    notes = [{"kind": "fallback-snapshot", "seq": s, "severity": "info"} for s in fallbacks]
    return Sample(
        name,
        "pure tool reorder and a mid-list insertion, both logged as fallback snapshots; then a removal delta",
        _files(name, rec),
        {f"{name}.jsonl": notes},
    )


def sample_resume_drift() -> Sample:
    name = "resume-prefix-drift"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH, READ, SKILL])
    rec.start_instance(prefix=skills_prefix([("release-notes", "Draft release notes from the git log.")]))
    rec.user_turn("What does the Makefile's default target do?")
    rec.step(Reply(calls=[ToolCall("read", {"file_path": "Makefile"}, "1\tall: test\n2\ttest:\n3\t\tpytest -q\n")]))
    rec.step(Reply(text="The default target `all` runs the tests (`pytest -q`)."))
    rec.end_turn()
    _deepseek_turn(rec, "Thanks. Is there a lint target?", "No, the Makefile has only `all` and `test`.")
    rec.start_instance(
        prefix=skills_prefix(
            [
                ("release-notes", "Draft release notes from the git log."),
                ("changelog", "Keep CHANGELOG.md in the project's format."),
            ]
        )
    )
    rec.user_turn("I'm back. Add a lint target that runs ruff.")
    drift_seq = rec.seq + 1  # step/start, then the resume snapshot
    rec.step(
        Reply(
            calls=[
                ToolCall(
                    "edit",
                    {"file_path": "Makefile", "old_string": "test:\n", "new_string": "lint:\n\truff check .\ntest:\n"},
                    "Edited Makefile.",
                )
            ]
        )
    )
    rec.step(Reply(text="Added `lint`, which runs `ruff check .`."))
    rec.end_turn()
    rec.start_instance(
        prefix=skills_prefix(
            [
                ("release-notes", "Draft release notes from the git log."),
                ("changelog", "Keep CHANGELOG.md in the project's format."),
            ]
        )
    )
    _deepseek_turn(rec, "Restarted again; does `make lint` pass?", "I have not run it yet; say if you want me to.")
    return Sample(
        name,
        "three loop instances: the second composes a bigger skills catalog (prefix drift in its "
        "resume snapshot), the third resumes with an unchanged header",
        _files(name, rec),
        {f"{name}.jsonl": [{"kind": "prefix-drift-at-resume", "seq": drift_seq, "turn": 3, "severity": "warning"}]},
    )


def _deepseek_turn(rec: SessionRecorder, prompt: str, answer: str, reasoning: str = "") -> None:
    rec.user_turn(prompt)
    rec.step(Reply(reasoning=reasoning, text=answer))
    rec.end_turn()


def sample_fork() -> Sample:
    name = "fork"
    world = World(_seed(name))
    capture = MemoryLines()
    parent_id = world.session_id()
    parent = SessionRecorder(
        world, MemoryLines(), capture, session_id=parent_id, cwd=CWD, system=SYSTEM, tools=[BASH, READ, SUBAGENT_FORK]
    )
    prefix = skills_prefix([("release-notes", "Draft release notes from the git log.")])
    parent.start_instance(prefix=prefix)
    _deepseek_turn(
        parent,
        "Remember this: the release codename is MARMALADE. Reply OK.",
        "OK",
        reasoning="The user wants me to keep a codename in mind.",
    )
    parent.user_turn("Use subagent_fork to ask a child what the release codename is.")
    call = ToolCall(
        "subagent_fork",
        {"description": "Recall the codename", "prompt": "What is the release codename? Answer with the word only."},
    )
    child_id = world.session_id()
    parent_step = Reply(reasoning="Delegate to a forked child, which sees the finished turns.", calls=[call])
    child: SessionRecorder | None = None

    def run_child() -> str:
        nonlocal child
        child = parent.fork(session_id=child_id)
        child.tools = [BASH, READ]  # a child cannot fork again: its resume snapshot differs
        child.start_instance(prefix=prefix)
        _deepseek_turn(child, call.arguments["prompt"], "MARMALADE")
        return "MARMALADE"

    call.result = run_child
    parent.step(parent_step)
    parent.step(Reply(text="The child answered MARMALADE."))
    parent.end_turn()
    _deepseek_turn(parent, "Great. Now forget it.", "Done.")
    assert child is not None
    files = {
        f"fork/{parent_id}.jsonl": parent.log.getvalue(),
        f"fork/{child_id}.jsonl": child.log.getvalue(),
        "fork/requests.jsonl": capture.getvalue(),
    }
    resume_seq = next(
        e["seq"]
        for e in map(orjson.loads, child.log.lines[1:])
        if e["type"] == "request/header" and e["data"]["reason"] == "resume"
    )
    child_notes = [
        {"kind": "header-drift-at-resume", "seq": resume_seq, "turn": 2, "path": "tools", "severity": "info"}
    ]
    return Sample(
        name,
        "a parent whose tool call forks a child at its last turn/end; the child (no "
        "subagent_fork tool) logs a resume snapshot; one requests.jsonl for both",
        files,
        {f"fork/{parent_id}.jsonl": [], f"fork/{child_id}.jsonl": child_notes},
    )


def sample_compaction() -> Sample:
    name = "compaction"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH])
    rec.start_instance()
    rec.user_turn("Run the five migration steps one at a time.")
    for i in range(3):
        rec.step(
            Reply(
                text=f"Running step {i}.",
                calls=[_bash(f"./migrate.sh {i}", f"Run migration step {i}", f"step {i} applied\n")],
            )
        )
    rec.step(
        Reply(text="Running step 3.", calls=[_bash("./migrate.sh 3", "Run migration step 3", "step 3 applied\n")]),
        compact=Compaction("Steps 0-2 of the migration ran cleanly via ./migrate.sh.", keep_last=2),
    )
    rec.step(Reply(text="Running step 4.", calls=[_bash("./migrate.sh 4", "Run migration step 4", "step 4 applied\n")]))
    rec.step(Reply(text="All five migration steps are applied."))
    rec.end_turn()
    rec.user_turn("Summarize what changed.")
    rec.step(
        Reply(text="Five migration steps ran, 0 through 4, each reporting success."),
        compact=Compaction("The migration (steps 0-4) ran cleanly; the user asked for a summary.", keep_last=1),
    )
    rec.end_turn()
    return Sample(
        name,
        "two compactions in agent/pre-step (the second shadows the first summary), with the "
        "summarize one-shots captured as loopBuilt:false",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_suffix() -> Sample:
    name = "message-suffix"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH, READ], framing="per-step")
    rec.start_instance()
    rec.request_prefix = skills_prefix([("release-notes", "Draft release notes from the git log.")])

    def state(files: int) -> list:
        return [{"role": "user", "content": text_content(f"<state>open editors: {files}</state>")}]

    rec.request_suffix = state(1)
    rec.user_turn("Open the README and check the install section.")
    rec.step(
        Reply(calls=[ToolCall("read", {"file_path": "README.md"}, "1\t# Demo\n2\t## Install\n3\tpip install demo\n")])
    )
    rec.request_suffix = state(2)
    rec.step(Reply(text="The install section says `pip install demo`."))
    rec.end_turn()
    rec.user_turn("And the version?")
    rec.step(
        Reply(calls=[_bash("python -c 'import demo; print(demo.__version__)'", "Print the package version", "1.4.0\n")])
    )
    rec.request_suffix = []
    rec.step(Reply(text="Version 1.4.0."))
    rec.end_turn()
    rec.request_suffix = state(3)
    _deepseek_turn(rec, "Thanks.", "You're welcome.")
    return Sample(
        name,
        "17bd71e530 shape: header carries messagePrefix and messageSuffix; the suffix changes "
        "per step (deltas, one clearing it with [])",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_capture_divergence() -> Sample:
    name = "capture-divergence"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH, READ, EDIT, SKILL])
    rec.config = {"model": DEFAULT_MODEL, "temperature": 0.2}
    _script_clean(rec)
    lines = rec.capture.lines
    first, second = orjson.loads(lines[2]), orjson.loads(lines[4])
    text_path = diverge_message_text(lines, 2, message=1)
    field_path = diverge_request_field(lines, 4, "temperature", 0.7)
    faults = [
        {
            "kind": "messages-diverge",
            "turn": first["turn"],
            "step": first["step"],
            "logLength": first["logLength"],
            "captureLine": 3,
            "path": text_path,
            "severity": "error",
        },
        {
            "kind": "header-field-diverges",
            "turn": second["turn"],
            "step": second["step"],
            "logLength": second["logLength"],
            "captureLine": 5,
            "path": field_path,
            "severity": "error",
        },
    ]
    return Sample(
        name,
        "clean log; its capture has one request whose message text differs and one whose "
        "temperature differs from the header",
        _files(name, rec),
        {f"{name}.jsonl": faults},
    )


def sample_capture_key_order() -> Sample:
    name = "capture-key-order"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH, READ, EDIT, SKILL])
    _script_clean(rec)
    line = orjson.loads(rec.capture.lines[3])
    path = reorder_message_keys(rec.capture.lines, 3, message=2)
    return Sample(
        name,
        "clean log; one capture line writes a message with its keys in another order (same JSON value)",
        _files(name, rec),
        {
            f"{name}.jsonl": [
                {
                    "kind": "key-order-only",
                    "turn": line["turn"],
                    "step": line["step"],
                    "captureLine": 4,
                    "path": path,
                    "severity": "warning",
                }
            ]
        },
    )


def sample_corrupt_delta() -> Sample:
    name = "corrupt-delta"
    _, rec = _single(name, system=MOCK_SYSTEM, model="mock", tools=[BASH, READ], chunk_style="mock")
    rec.start_instance()
    _mock_turn(rec, "turn 1", "ok 1")
    rec.tools = [BASH, READ, GREP]
    rec.user_turn("turn 2: grep is added")
    delta_seq = rec.seq + 1
    rec.step(Reply(text="ok 2"))
    rec.end_turn()
    _mock_turn(rec, "turn 3", "ok 3")
    corrupt_delta_remove_unknown_tool(rec.log.lines, delta_seq, "write")
    return Sample(
        name,
        "the tools delta of turn 2 also removes `write`, a tool that is not in force",
        _files(name, rec),
        {
            f"{name}.jsonl": [
                {
                    "kind": "delta-does-not-apply",
                    "seq": delta_seq,
                    "turn": 2,
                    "path": "data.tools.removed",
                    "severity": "error",
                }
            ]
        },
    )


def _crash_turn(rec: SessionRecorder, prompt: str, calls: list[ToolCall]) -> None:
    rec.user_turn(prompt)
    try:
        rec.step(Reply(reasoning="Run it.", calls=calls))
    except SimulatedCrash:
        return
    raise AssertionError("the scripted crash did not happen")


def sample_torn_tail() -> Sample:
    name = "torn-tail"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH])
    rec.start_instance()
    _deepseek_turn(rec, "Say hi.", "Hi.")
    _deepseek_turn(rec, "Say bye.", "Bye.")
    crash = ToolCall("bash", {"command": "make -j8", "description": "Build everything"}, CRASH)
    _crash_turn(rec, "Run the slow build.", [crash])
    torn_seq = rec.seq - 1
    files = _files(name, rec)
    files[f"{name}.jsonl"] = tear_last_line(files[f"{name}.jsonl"])
    return Sample(
        name,
        "the process died while writing the tool/call line of an open third turn: the file "
        "ends mid-line with no newline",
        files,
        {
            f"{name}.jsonl": [
                {"kind": "torn-tail", "seq": torn_seq, "turn": 3, "severity": "warning"},
                {"kind": "open-turn-at-end", "turn": 3, "step": 1, "severity": "info"},
            ]
        },
    )


def sample_repaired_resume() -> Sample:
    name = "repaired-resume"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH, READ])
    rec.start_instance()
    _deepseek_turn(rec, "Which Python is installed?", "Python 3.11.")
    _crash_turn(
        rec,
        "Run the benchmarks and read the report.",
        [
            ToolCall("bash", {"command": "make bench", "description": "Run the benchmarks"}, CRASH),
            ToolCall("read", {"file_path": "bench/report.txt"}, "never read"),
        ],
    )
    rec.repair()
    rec.start_instance()
    _deepseek_turn(
        rec,
        "The machine rebooted. Did the benchmarks finish?",
        "No: the run was interrupted before it reported anything.",
    )
    return Sample(
        name,
        "a crash during the first of two tool calls, the store's repair closers (one result "
        "with and one without sourceEventSeqs, step/end, turn/end interrupted), then a resumed instance",
        _files(name, rec),
        {f"{name}.jsonl": [{"kind": "interrupted-turn-repaired", "turn": 2, "severity": "info"}]},
    )


SAMPLES: list[Callable[[], Sample]] = [
    sample_clean,
    sample_steering,
    sample_delta_system,
    sample_delta_tools,
    sample_delta_config,
    sample_delta_prefix,
    sample_prefix_unstable,
    sample_fallback,
    sample_resume_drift,
    sample_fork,
    sample_compaction,
    sample_suffix,
    sample_capture_divergence,
    sample_capture_key_order,
    sample_corrupt_delta,
    sample_torn_tail,
    sample_repaired_resume,
]
