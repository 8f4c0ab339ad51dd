"""The rule table: code, category, default severity, rationale and example.

Every finding the library emits names a code from this table, so the table is
the single place where a rule is documented (``inspector rules`` prints it,
docs/RULES.md is generated from it).  Checks look up severity and category
here instead of hard-coding them, which is what lets configuration override a
severity without touching the checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from invariants.model.findings import Finding


TABS = ("request", "diff", "header", "prefix", "events", "findings")  # the TUI's tabs, in order
FIRES = ("while-read", "after-fold", "at-end")


@dataclass(slots=True, frozen=True)
class Rule:
    """One rule: everything the checks, the report, the TUI and follow mode know about it.

    ``tab``: the TUI tab that shows one of its findings best (one of :data:`TABS`).
    ``fires``: ``while-read`` as the log is read and folded (or its requests compared);
    ``after-fold`` by ``replay()`` once the fold is done, which a resumed replay does not
    redo (follow mode and the index carry these findings over); ``at-end`` about where
    the log ends right now, which comes and goes while a log is written (follow mode
    reports it only when it stops).  ``loses_header``: what a lost header event would explain
    (no header in force, a delta or resume with nothing to apply to): after events were lost
    since the last anchor snapshot, it is counted in that loss instead of reported.
    ``relaxed_in_fixtures``: an error in a snapshot fixture (a placeholder cwd) becomes LOG015.
    Where it is raised is found in the source (``inspector rules CODE``).
    """

    code: str
    name: str
    category: str
    severity: str
    summary: str
    rationale: str
    example: str = ""
    tab: str = "events"
    fires: str = "while-read"
    loses_header: bool = False
    relaxed_in_fixtures: bool = False


_TABLE: list[Rule] = [
    # ---- log-integrity -------------------------------------------------
    Rule(
        code="LOG001",
        name="invalid-json",
        category="log-integrity",
        severity="error",
        summary="A line is not valid JSON.",
        rationale="The harness refuses to load a log with an unparsable line before its last committed turn/end; "
        "every event after it is lost to a resume.",
        example='line 12: {"type":"turn/end","seq":11,',
    ),
    Rule(
        code="LOG002",
        name="bad-envelope",
        category="log-integrity",
        severity="error",
        summary=(
            "A line is JSON but not a valid event envelope (not an object, missing or mistyped "
            "type/seq/time/data, extra keys)."
        ),
        rationale="Seed loading (assertSessionEventEnvelope) rejects such a line, so the log cannot be resumed.",
        example='{"type":"turn/start","seq":"3","time":1,"data":{}}  (seq is a string)',
    ),
    Rule(
        code="LOG003",
        name="seq-gap",
        category="log-integrity",
        severity="error",
        summary="Event seqs are not contiguous from 0 (a gap, a repeat or a step back).",
        rationale="Replay equivalence rests on seq == index; the harness rejects a seed that breaks it.",
        example="seq 40 follows seq 38",
        relaxed_in_fixtures=True,
    ),
    Rule(
        code="LOG004",
        name="torn-tail",
        category="log-integrity",
        severity="warning",
        summary=(
            "The log ends in a crash-truncated tail: a fragment without newline, an unparsable or gapped last "
            "line after the last committed turn/end."
        ),
        rationale=(
            "The harness cuts such a tail and repairs the open turn on the next load; the events in it are lost, "
            "which explains a missing step but is not a harness bug."
        ),
        example='last line: {"type":"assistant/chu',
        fires="at-end",
    ),
    Rule(
        code="LOG005",
        name="bad-session-header",
        category="log-integrity",
        severity="error",
        summary=(
            'The first line is missing, unparsable, not type "session", has the wrong version or malformed fields.'
        ),
        rationale="Without a valid session header the harness refuses the whole file.",
        example='{"type":"session","version":1,"id":"x"}',
    ),
    Rule(
        code="LOG006",
        name="open-turn-at-end",
        category="log-integrity",
        severity="info",
        summary="The log ends inside an open turn (no turn/end): the process stopped mid-turn.",
        rationale=(
            "On the next load the harness appends synthetic closers (error tool results, step/end, "
            "turn/end{interrupted}); the requests of that turn may never have completed."
        ),
        example="last event is assistant/chunk of turn 4, step 2",
        fires="at-end",
    ),
    Rule(
        code="LOG014",
        name="interrupted-turn-repaired",
        category="log-integrity",
        severity="info",
        summary=(
            "A turn ended with reason interrupted: the harness repaired a crashed turn on load (synthetic closers)."
        ),
        rationale="The requests of that turn may never have completed; tool calls in it got synthetic error results.",
        example='{"type":"turn/end","data":{"turn":2,"reason":{"kind":"interrupted"}}}',
    ),
    Rule(
        code="LOG007",
        name="unknown-event-type",
        category="log-integrity",
        severity="error",
        summary="A late-era log holds an event type the harness does not know, without `ignorable: true`.",
        rationale="From da29b86834 on the harness refuses a log with an unknown, non-ignorable event type.",
        example='{"type":"plugin/thing","seq":9,...}',
    ),
    Rule(
        code="LOG008",
        name="oversized-line",
        category="log-integrity",
        severity="error",
        summary="A line is larger than the configured limit and was not parsed.",
        rationale="A single huge line is either corruption or an attack; skipping it keeps memory bounded.",
        example="line 88 is 60 MB",
    ),
    Rule(
        code="LOG009",
        name="zstd-frame",
        category="log-integrity",
        severity="error",
        summary=(
            "A zstd frame is corrupt (checksum or decompression failure) or the file has no complete header frame."
        ),
        rationale="The harness refuses to load a compressed log with a broken complete frame.",
        example="frame 14 at byte 90112: checksum mismatch",
    ),
    Rule(
        code="LOG010",
        name="torn-zstd-frame",
        category="log-integrity",
        severity="warning",
        summary="A .jsonl.zstd log ends inside its last frame (EOF mid-frame).",
        rationale=(
            "The harness keeps the complete lines of that frame and rewrites it on the next load; later lines are lost."
        ),
        example="EOF inside frame 31",
    ),
    Rule(
        code="LOG011",
        name="mixed-era",
        category="log-integrity",
        severity="warning",
        summary="A log shows shapes of more than one format era.",
        rationale="The checker picks one profile; events of the other era may be judged by the wrong rules.",
        example="a request/header-delta in a log with packed chunk rows",
        fires="after-fold",
    ),
    Rule(
        code="LOG012",
        name="bad-chunk-row",
        category="log-integrity",
        severity="error",
        summary="A packed chunk row (text-chunks, reasoning-chunks, tool-call-chunks) is malformed.",
        rationale="The harness's row decoder throws on a bad row and the log fails to load.",
        example='{"type":"text-chunks","seq0":5,"time0":1,"data":{"dt":[],"texts":[]}}',
    ),
    Rule(
        code="LOG015",
        name="snapshot-fixture",
        category="log-integrity",
        severity="info",
        summary=(
            'A scrubbed test fixture (its header cwd is a normaliser placeholder such as "{{cwd}}"): seq gaps, events '
            "outside their turn/step framing and sourceEventSeqs into trimmed events are reported here instead of as "
            "errors."
        ),
        rationale=(
            "The harness never writes a relative cwd; such a file was rewritten by its snapshot tooling and is "
            "consumed as a model-replay script (dsh-llm-replay reads only the chunks), which tests trim and "
            "extend by hand."
        ),
        example='{"type":"session","cwd":"{{cwd}}",...} with chunks of turn 2 and no turn/start',
    ),
    Rule(
        code="LOG016",
        name="sqlite-row",
        category="log-integrity",
        severity="error",
        summary="A row of a SQLite session database cannot be decoded (a data BLOB that is not zstd, a malformed "
        "source_event_seqs varint BLOB, a bad ignorable value).",
        rationale=(
            "The harness's SQLite backend throws on such a row: fatal before the last committed turn/end, a torn "
            "tail after it."
        ),
        example="row seq 12: source_event_seqs: truncated varint",
    ),
    Rule(
        code="LOG017",
        name="late-header-field",
        category="log-integrity",
        severity="warning",
        summary=(
            "A late-era JSONL session header lacks a field HEAD's reader requires (delegationDepth) or carries "
            "one it refuses (a retired sandboxMode/approvalPolicy, an origin other than subagent)."
        ),
        rationale=(
            "HEAD's JSONL backend rejects such a header (isHeaderLine / fromHeaderLine): the log was written "
            "before 0d00106fa8 or by another writer, and a current harness cannot resume it."
        ),
        example='{"type":"session","version":0,"id":"s","createdAt":1}  (no delegationDepth)',
    ),
    Rule(
        code="LOG018",
        name="mixed-log-forms",
        category="log-integrity",
        severity="error",
        summary=(
            "A log mixes the runtime form (every body line carries seq and time) and the projected snapshot form "
            "(committed fixtures: body lines without seq/time, seq0/time0 on packed rows); one finding per log."
        ),
        rationale=(
            "Upstream writes a snapshot fixture wholly projected and a runtime log never projected; its replay parser "
            "(parseSessionLog) fills in only a missing envelope, so a mixed file is read, but its seqs no longer say "
            "what the runtime wrote."
        ),
        example=(
            'line 2 {"type":"turn/start","data":{...}} then line 3 {"type":"step/start","seq":1,"time":5,"data":{...}}'
        ),
    ),
    Rule(
        code="LOG013",
        name="bad-capture-line",
        category="log-integrity",
        severity="error",
        summary="A line of the capture file is not a JSON object with a request object.",
        rationale="A recorded request that cannot be read cannot be checked.",
        example="requests.jsonl line 3: [1,2,3]",
    ),
    # ---- event-contract --------------------------------------------------
    Rule(
        code="EVT001",
        name="surface-meta-on-log-only",
        category="event-contract",
        severity="error",
        summary="A non-surface event carries surfaceOp or sourceEventSeqs.",
        rationale=(
            "Only surface events shape the model-visible history; metadata elsewhere means a writer bypassed the "
            "typed append."
        ),
        example='{"type":"turn/start",...,"surfaceOp":"append"}',
    ),
    Rule(
        code="EVT002",
        name="surface-op-missing",
        category="event-contract",
        severity="error",
        summary="A surface event (user/assistant/tool-result/context/steering message) has no valid surfaceOp.",
        rationale=(
            "Without a surfaceOp the event never reaches the surface, so it silently drops out of every later request."
        ),
        example='{"type":"user/message","seq":1,...}  (no surfaceOp)',
    ),
    Rule(
        code="EVT003",
        name="source-seqs-invalid",
        category="event-contract",
        severity="error",
        summary="sourceEventSeqs is empty, has duplicates, or names a seq that is not an earlier event.",
        rationale="Provenance links must point backwards at real events, or replay cannot attribute derived content.",
        example='"sourceEventSeqs":[12] on seq 10',
        # a fixture's sourceEventSeqs keep the seqs of the events a test trimmed away; in a projected
        # snapshot the rebuilt seqs close those gaps, so the references point at other events
        relaxed_in_fixtures=True,
    ),
    Rule(
        code="EVT004",
        name="replace-range-invalid",
        category="event-contract",
        severity="error",
        summary="A surface replace names a start or end that is not on the surface, or start lies after end.",
        rationale="The harness's surface fold throws; any derivation past this point is undefined.",
        example='"surfaceOp":{"op":"replace","start":7,"end":3}',
    ),
    Rule(
        code="EVT005",
        name="replace-provenance",
        category="event-contract",
        severity="error",
        summary="A surface replace does not list every shadowed surface node in sourceEventSeqs.",
        rationale="Compaction must say what it shadowed so the original history stays attributable.",
        example="replace of [4..9] with sourceEventSeqs [4,9]",
    ),
    Rule(
        code="EVT006",
        name="turn-order",
        category="event-contract",
        severity="error",
        summary=(
            "turn/start or turn/end out of order: a turn opened while one is open, a wrong number, or a close "
            "with a step open."
        ),
        rationale="Turns are the commit unit of the log; misnumbered turns break resume and step attribution.",
        example="turn/start 3 while turn 2 is still open",
    ),
    Rule(
        code="EVT007",
        name="step-order",
        category="event-contract",
        severity="error",
        summary="step/start in the wrong turn, while a step is open, or with the wrong number.",
        rationale="Requests are anchored at step/start; a misplaced one moves the request boundary.",
        example="step/start 3 expected step 2",
    ),
    Rule(
        code="EVT008",
        name="step-scope",
        category="event-contract",
        severity="error",
        summary=(
            "A step-scoped event (chunk, assistant message, tool call/result, step/end) names a (turn, step) that "
            "is not the open one."
        ),
        rationale="Streamed content attributed to the wrong step corrupts the derivation of the next request.",
        example="assistant/message names turn 2/step 1 but open is turn 2/step 2",
        relaxed_in_fixtures=True,
    ),
    Rule(
        code="EVT009",
        name="tool-result-unpaired",
        category="event-contract",
        severity="error",
        summary=(
            "A tool/result has no pending tool/call with its callId in the same step (crash-repair results excepted)."
        ),
        rationale="The model would see a result for a call it never made in this step.",
        example="tool/result for call_7 with no prior tool/call in this step",
    ),
    Rule(
        code="EVT010",
        name="outside-turn",
        category="event-contract",
        severity="error",
        summary="An event that must be turn-enclosed appears outside any open turn.",
        rationale=(
            "The log's commit unit is the turn: a bare event between turns is dropped by the harness on reload."
        ),
        example="todo/write between turn/end 2 and turn/start 3",
        relaxed_in_fixtures=True,
    ),
    Rule(
        code="EVT011",
        name="bad-event-data",
        category="event-contract",
        severity="error",
        summary=(
            "A known event type carries data of the wrong shape (e.g. a non-integer turn, content that is not an "
            "array, a turn/end reason without a string kind, a late-era message without an id or with the wrong "
            "role)."
        ),
        rationale=(
            "The harness's typed readers would throw or mis-project such an event; HEAD's load path refuses it."
        ),
        example='{"type":"step/start","data":{"turn":"1","step":1}}',
    ),
    Rule(
        code="EVT012",
        name="turn-closed-after-step-failure",
        category="event-contract",
        severity="warning",
        summary="Late era: a turn/end with reason error or aborted while a step is still open.",
        rationale=(
            "The late-era loop (agent.ts) always appends step/end before turn/end; when that step/end append is "
            "itself rejected, the failure ends the turn in error (aborted when cancelled) with the step left "
            "open. The store accepts the log; HEAD's dev-mode session invariant would flag it. A completed, "
            "max-tokens or blocked turn with a step open has no such path and stays EVT006."
        ),
        example='step/start 1/1 ... turn/end {"turn":1,"reason":{"kind":"error",...}} with no step/end',
    ),
    Rule(
        code="EVT013",
        name="unknown-value",
        category="event-contract",
        severity="warning",
        summary=(
            "An enumerated field holds a value its era's format does not define (a turn/end reason kind, a "
            "message source kind, a content block or stream chunk type, a finish reason, a todo status, a trigger "
            "kind, an inbox target); the finding names the field and the allowed values."
        ),
        rationale=(
            "The store keeps any lossless JSON and most of these unions are merge-extensible, so the log still "
            "loads; but no part of the harness of that era writes the value, and every consumer that switches on "
            "it falls through: a foreign writer, a plugin's own kind, or a typo."
        ),
        example='{"type":"turn/end","data":{"turn":2,"reason":{"kind":"weird"}}}',
    ),
    # ---- header-codec ------------------------------------------------------
    Rule(
        code="HDR001",
        name="delta-before-snapshot",
        category="header-codec",
        severity="error",
        summary="A request/header-delta appears before any request/header snapshot.",
        rationale="foldRequestHeader throws on it: the log is corrupt and no request after it can be reconstructed.",
        example="request/header-delta at seq 4, first snapshot at seq 20",
        tab="header",
        loses_header=True,
    ),
    Rule(
        code="HDR002",
        name="delta-does-not-apply",
        category="header-codec",
        severity="error",
        summary=(
            "A delta arm cannot apply cleanly to the header in force (keepStart+keepEnd beyond the prompt, "
            "removing or changing a missing tool, adding an existing one)."
        ),
        rationale=(
            "The harness's apply silently produces a different header than the writer meant; every later request "
            "inherits it."
        ),
        example='{"tools":{"added":[],"removed":["grep"],"changed":[]}} with no grep in force',
        tab="header",
    ),
    Rule(
        code="HDR003",
        name="delta-not-canonical",
        category="header-codec",
        severity="warning",
        summary="A delta does not re-diff to itself: diff(prev, apply(prev, delta)) is a different payload.",
        rationale=(
            "The harness writer only logs diffHeader output; a different encoding means another writer or a hand edit."
        ),
        example='system arm {"keepStart":0,"keepEnd":0,"insert":["A","B"]} where line A was unchanged',
        tab="header",
    ),
    Rule(
        code="HDR004",
        name="delta-empty",
        category="header-codec",
        severity="warning",
        summary="A delta is empty or changes nothing.",
        rationale=(
            "The loop writes nothing when the header is unchanged; a no-op delta means the equality check was bypassed."
        ),
        example='{"type":"request/header-delta","data":{}}',
        tab="header",
    ),
    Rule(
        code="HDR005",
        name="snapshot-not-canonical",
        category="header-codec",
        severity="warning",
        summary='A snapshot carries empty fields that canonical form drops (system "", tools [], messagePrefix []).',
        rationale=(
            "Loop-written snapshots are canonical; empty-vs-absent is one state and a writer that distinguishes "
            "them will diverge."
        ),
        example='{"header":{"config":{"model":"m"},"system":""},"reason":"initial"}',
        tab="header",
    ),
    Rule(
        code="HDR006",
        name="header-shape",
        category="header-codec",
        severity="error",
        summary=(
            "A header snapshot or delta payload has the wrong shape (no config object, an arm of the wrong type, "
            "unknown arm)."
        ),
        rationale="The fold cannot interpret it; the header in force after it is unknown.",
        example='{"system":"new prompt"}  (a delta arm must be {keepStart, keepEnd, insert})',
        tab="header",
    ),
    Rule(
        code="HDR007",
        name="initial-after-headers",
        category="header-codec",
        severity="error",
        summary='A request/header with reason "initial" on a log that already had header events.',
        rationale="A loop instance writes initial only on a header-less log; otherwise it must anchor with resume.",
        example="second initial snapshot at seq 120",
        tab="header",
    ),
    Rule(
        code="HDR008",
        name="resume-without-headers",
        category="header-codec",
        severity="error",
        summary='A request/header with reason "resume" on a log that had no header event before.',
        rationale=(
            "resume anchors a new loop instance on a log that already has a fold; with none, initial is required."
        ),
        example="first header event of the log has reason resume",
        tab="header",
        loses_header=True,
    ),
    Rule(
        code="HDR009",
        name="instance-without-anchor",
        category="header-codec",
        severity="error",
        summary=(
            "A loop instance's first header event is a delta or a non-anchor snapshot (the session start or a "
            "fork boundary must be followed by initial/resume)."
        ),
        rationale=(
            "Each instance anchors the header it builds from; without the anchor the fold carries the previous "
            "process's header."
        ),
        example="forked child's first own step logs a request/header-delta",
        tab="header",
        loses_header=True,
    ),
    Rule(
        code="HDR010",
        name="header-outside-step",
        category="header-codec",
        severity="error",
        summary="A header event is not between its step's step/start and the step's first assistant/chunk.",
        rationale=(
            "The header is logged just before dispatch; elsewhere it cannot govern the request it should describe."
        ),
        example="request/header after assistant/chunk seq 40 in turn 2/step 1",
        tab="header",
    ),
    Rule(
        code="HDR011",
        name="unknown-reason",
        category="header-codec",
        severity="error",
        summary="A request/header snapshot carries a reason that its era does not write.",
        rationale=(
            "initial/resume/fallback (seed) and initial/resume/change (late) are the only reasons; others are "
            "foreign writers."
        ),
        example='"reason":"refresh"',
        tab="header",
    ),
    Rule(
        code="HDR012",
        name="late-era-delta",
        category="header-codec",
        severity="error",
        summary="A request/header-delta in a late-era log.",
        rationale=(
            'From 1123e946c0 the harness rejects the whole log ("unsupported legacy request/header-delta format").'
        ),
        example="request/header-delta in a log with delegationDepth",
        tab="header",
    ),
    Rule(
        code="HDR013",
        name="fallback-expressible",
        category="header-codec",
        severity="info",
        summary="A fallback snapshot whose change a round-tripping delta could have expressed.",
        rationale=(
            "The writer falls back only when the delta fails its round-trip guard; otherwise it is a larger log "
            "than needed."
        ),
        example="fallback that only changes temperature",
        tab="header",
    ),
    Rule(
        code="HDR014",
        name="fallback-snapshot",
        category="header-codec",
        severity="info",
        summary=(
            "A fallback snapshot: the header changed in a way the delta encoding cannot express (a pure tool "
            "reorder, a tool inserted mid-list)."
        ),
        rationale=(
            "Normal harness behaviour, shown so a header change in the timeline has its cause; a reorder also "
            "changes the request bytes."
        ),
        example='tools [read, bash] -> [bash, read] logged as {"reason":"fallback"}',
        tab="header",
    ),
    Rule(
        code="HDR015",
        name="anchor-reason",
        category="header-codec",
        severity="warning",
        summary=(
            "Late era: an initial snapshot on a log that already has a header fold, or a resume snapshot on one "
            "without."
        ),
        rationale="HEAD's loop writes initial exactly when the log has no header yet and resume otherwise (agent.ts "
        "buildRequest); "
        "the loader accepts either, so the request is still explained, but another writer chose the reason.",
        example='request/header {reason:"initial"} at seq 8 after one at seq 3',
        tab="header",
        loses_header=True,
    ),
    # ---- unexplained-request ------------------------------------------------
    Rule(
        code="REQ001",
        name="step-without-header",
        category="unexplained-request",
        severity="error",
        summary="A step dispatched a request (it streamed) but no header was in force.",
        rationale=(
            "The log cannot explain the request's model, system or tools: the reconstruction promise is broken."
        ),
        example="assistant/chunk in turn 1/step 1 and no request/header before it",
        tab="header",
        loses_header=True,
    ),
    Rule(
        code="REQ002",
        name="request-without-step",
        category="unexplained-request",
        severity="error",
        summary="A recorded loop-built request has no step/start before its position in the log.",
        rationale="The request boundary is the last step/start; with none the messages cannot be derived.",
        example="logLength 2 and the first step/start is seq 5",
        tab="diff",
    ),
    Rule(
        code="REQ003",
        name="request-without-header",
        category="unexplained-request",
        severity="error",
        summary="A recorded loop-built request has no header event before its position in the log.",
        rationale="With no fold the request's non-content half is unexplained.",
        example="logLength 3, first request/header at seq 5",
        tab="diff",
    ),
    Rule(
        code="REQ004",
        name="request-without-session",
        category="unexplained-request",
        severity="error",
        summary="A recorded request names a session (or position) that no checked log explains.",
        rationale="A request that no log explains is exactly what the reconstruction promise forbids.",
        example="sessionId abc in requests.jsonl; no abc.jsonl",
    ),
    Rule(
        code="REQ005",
        name="request-beyond-log",
        category="unexplained-request",
        severity="error",
        summary="A recorded request's logLength exceeds the events in its log.",
        rationale=(
            "The log ends before the request was sent: it was truncated or the capture belongs to a different run."
        ),
        example="logLength 120, log has 97 events",
        tab="diff",
    ),
    # ---- request-divergence --------------------------------------------------
    Rule(
        code="DIV001",
        name="messages-diverge",
        category="request-divergence",
        severity="error",
        summary=(
            "A recorded request's messages differ from messagePrefix + derive(events before step/start) (+ "
            "messageSuffix)."
        ),
        rationale=(
            "This is the dev invariant the harness enforces live: the request is not a pure function of the log."
        ),
        example='messages[3].content[0].text: expected "ls", recorded "ls -la"',
        tab="diff",
    ),
    Rule(
        code="DIV002",
        name="key-order-only",
        category="request-divergence",
        severity="warning",
        summary="A recorded request equals the reconstruction structurally but differs in object key order.",
        rationale="The bytes differ, which busts provider prefix caches even though the content is the same.",
        example='messages[2].content[0]: keys ["text","type"] vs ["type","text"]',
        tab="diff",
    ),
    # ---- header-divergence ---------------------------------------------------
    Rule(
        code="DIV010",
        name="header-field-diverges",
        category="header-divergence",
        severity="error",
        summary=(
            "A recorded request's model, system, tools, temperature, maxTokens, stop (late era: provider, "
            "reasoningEffort) differ from the folded header."
        ),
        rationale=(
            "The header fold is the log's account of the call config; a mismatch means a change that was never logged."
        ),
        example="temperature: header 0.2, recorded 0.7",
        tab="diff",
    ),
    Rule(
        code="DIV011",
        name="unexplained-field",
        category="header-divergence",
        severity="warning",
        summary="A recorded request carries a field the log has no account of.",
        rationale="Anything sent to the provider that the log cannot reproduce breaks replay.",
        example='"topP":0.9 in the recorded request',
        tab="diff",
    ),
    # ---- prefix-instability / drift -------------------------------------------
    Rule(
        code="PFX001",
        name="prefix-changed-in-instance",
        category="prefix-instability",
        severity="error",
        summary="messagePrefix changed inside one loop instance (by a delta or a fallback snapshot).",
        rationale=(
            "The session prefix is composed once per instance; a change mid-instance rewrites the start of every "
            "request and busts the cache."
        ),
        example="request/header-delta {messagePrefix:[...]} at seq 88, instance anchored at seq 3",
        tab="prefix",
    ),
    Rule(
        code="PFX002",
        name="prefix-drift-at-resume",
        category="prefix-drift",
        severity="warning",
        summary="messagePrefix differs across a resume (the new instance composed a different prefix).",
        rationale=(
            "Attributable drift: requests before the resume start with the old prefix, after it with the new one; "
            "the provider cache is lost once."
        ),
        example="resume at seq 120: messagePrefix[0].content[0].text changed",
        tab="prefix",
    ),
    Rule(
        code="PFX003",
        name="header-drift-at-resume",
        category="prefix-drift",
        severity="info",
        summary="system, tools or config differ across a resume.",
        rationale=(
            "A new process assembled a different header; expected after upgrades, worth knowing when caches miss."
        ),
        example="resume at seq 120: tools changed (added grep)",
        tab="prefix",
    ),
    # ---- fork-seed ------------------------------------------------------------
    Rule(
        code="FRK001",
        name="seed-mismatch",
        category="fork-seed",
        severity="error",
        summary="A forked child's first seedLength events differ from its parent's log.",
        rationale=(
            "The child's seed must be the parent's events copied verbatim, or the child's history is not the parent's."
        ),
        example="child seq 12 differs from parent seq 12",
    ),
    Rule(
        code="FRK002",
        name="seed-boundary",
        category="fork-seed",
        severity="error",
        summary="A forked child's seed does not end on a closed turn (seed era: its last event must be turn/end).",
        rationale="A fork inside an open turn would copy a half-finished step into the child.",
        example="seedLength 37 and seq 36 is assistant/message",
    ),
    Rule(
        code="FRK003",
        name="parent-not-found",
        category="fork-seed",
        severity="info",
        summary="A forked child's parent log is not among the checked logs, so the seed was not compared.",
        rationale="The fork-seed check needs both logs.",
        example="parentSession abc, no abc.jsonl beside the child",
    ),
    Rule(
        code="FRK004",
        name="seed-too-long",
        category="fork-seed",
        severity="error",
        summary="seedLength exceeds the number of events in the child's (or the parent's) log.",
        rationale="The seed cannot be longer than what was copied.",
        example="seedLength 40 on a 12-event log",
    ),
    # ---- token-accounting / context-pressure (need the tokenizer: `inspector check --tokens`) ----
    Rule(
        code="TOK001",
        name="usage-mismatch-hint",
        category="token-accounting",
        severity="warning",
        summary=(
            "The provider's input count (inputTokens + cacheReadTokens) departs from the tokens of the rebuilt "
            "request by more than the session's steady difference allows: the log does not explain what was sent."
        ),
        rationale=(
            "Without a recorded request the provider's usage is the only witness of what the loop sent. Real "
            "usage keeps a steady difference from our count (template tokens, a header recorded differently); a "
            "jump at one step means a message was sent that the log lacks, or one the log has was not sent. Mock "
            "usage (10, 20, ...) is recognised and never compared. A hint, never an error: it cannot say which "
            "message."
        ),
        example=(
            "step 4.2: provider counted 3,091 input tokens, the log implies 2,640: about 450 tokens were sent "
            "that the log does not explain"
        ),
    ),
    Rule(
        code="CTX001",
        name="request-over-window",
        category="context-pressure",
        severity="warning",
        summary="A request is larger than the model's context window (request/context.contextWindow, the configured "
        "per-model table or --context-window) and the log shows no answer to it.",
        rationale=(
            "A provider refuses a request over its window; the loop only recovers when compaction runs on the overflow."
        ),
        example=(
            "step 3.1: the request is about 2,140 tokens by the DeepSeek V4 tokenizer, over the 128-token context "
            "window"
        ),
    ),
    Rule(
        code="CTX002",
        name="over-window-handled",
        category="context-pressure",
        severity="info",
        summary=(
            "A request is larger than the context window, and the log shows what became of it: the provider "
            "refused it and a compaction inside the step recovered, or the provider answered it anyway."
        ),
        rationale=(
            "The overflow happened and was handled (or the provider counts differently, e.g. a test adapter); "
            "worth knowing when a session's cost or latency jumps."
        ),
        example=(
            "step 3.1: ... over the 128-token context window; the provider refused it (CONTEXT_WINDOW_EXCEEDED), "
            "then a compaction at seq 21 recovered the step"
        ),
    ),
    Rule(
        code="CTX003",
        name="over-threshold-no-compaction",
        category="context-pressure",
        severity="info",
        summary=(
            "A request is at or over the compaction threshold (80% of the window by default) and no compaction "
            "ran in the agent/pre-step before it."
        ),
        rationale=(
            "The harness gates compaction on its own estimate, not on this tokenizer, so this is not proof of a "
            "bug; a run of such steps reaches the window soon. One finding per run of steps."
        ),
        example="step 1.5: the request is about 340 tokens ..., at or over the compaction threshold of 320",
    ),
    Rule(
        code="CTX004",
        name="under-gate",
        category="context-pressure",
        severity="warning",
        summary=(
            "The first request of a resumed or forked loop instance crosses the compaction threshold only because "
            "its prefix grew: with the previous instance's folded prefix it would not have, and no compaction "
            "ran."
        ),
        rationale=(
            "The pressure gate runs in agent/pre-step, before the new instance logs its header, so it reads the "
            "previous instance's prefix and under-counts a grown one: it skips compaction and ships an "
            "over-threshold (or over-window) first request."
        ),
        example=(
            "step 7.1: about 1,050 tokens against a threshold of 1,024 on the first request of a new instance "
            "whose prefix grew by 60 tokens: the gate counts about 990"
        ),
    ),
    # ---- resume (needs a previous observation: `inspector check --ledger FILE`) ----
    Rule(
        code="RSM001",
        name="log-rewritten",
        category="log-integrity",
        severity="error",
        summary=(
            "A log no longer begins with what a previous check recorded for it in the ledger (--ledger): it was "
            "rewritten, not appended to, so a later resume continues a history that is not the previous "
            "instance's log."
        ),
        rationale=(
            "A resume seeds the new instance with the whole stored log and only appends (a crash repair only cuts "
            "a torn tail); a consistent rewrite of earlier events leaves no trace inside one log, so the ledger "
            "keeps the byte count and SHA-256 each check saw."
        ),
        example=(
            "ledger: 112 events, 48213 bytes, sha256 3f1c...; now the first 48213 bytes differ and a resume "
            "follows at seq 140"
        ),
    ),
]

RULES: dict[str, Rule] = {r.code: r for r in _TABLE}
assert len(RULES) == len(_TABLE), "duplicate rule code"


def rules_where(**fields: Any) -> frozenset[str]:
    """The codes of the rules whose fields have these values, e.g. ``rules_where(fires="at-end")``."""
    return frozenset(r.code for r in _TABLE if all(getattr(r, k) == v for k, v in fields.items()))


def get_rule(code: str) -> Rule:
    return RULES[code]


def rules_by_category() -> dict[str, list[Rule]]:
    out: dict[str, list[Rule]] = {}
    for r in _TABLE:
        out.setdefault(r.category, []).append(r)
    return out


_LOCATION_INTS = ("line", "seq", "turn", "step")


def make_finding(code: str, message: str, **where: Any) -> Finding:
    """A Finding for rule ``code`` with the rule's category and default severity.

    ``line``, ``seq``, ``turn`` and ``step`` are integers or None in every report: a
    turn or step the log wrote as something else (a string, a list...) is moved to
    ``detail["logged_<key>"]`` as a short JSON preview.
    """
    from invariants.model.findings import Finding
    from invariants.model.jsonvalue import is_safe_int, shorten

    for key in _LOCATION_INTS:
        v = where.get(key)
        if v is None or (type(v) is int and is_safe_int(v)):
            continue
        if isinstance(v, float) and v.is_integer() and is_safe_int(int(v)):
            where[key] = int(v)
            continue
        where[key] = None
        where["detail"] = {**(where.get("detail") or {}), f"logged_{key}": shorten(v, 80)}
    rule = RULES[code]
    return Finding(rule=code, category=rule.category, severity=rule.severity, message=message, **where)
