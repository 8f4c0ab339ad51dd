"""The rows of the log's own rules: the integrity of its lines and the event contract."""

from __future__ import annotations

from invariants.model.rule import Rule

ROWS: list[Rule] = [
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
        unreadable_line=True,
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
        unreadable_line=True,
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
        unreadable_line=True,
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
        unreadable_line=True,
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
        code="LOG019",
        name="unreadable-log",
        category="log-integrity",
        severity="error",
        summary=(
            "A log whose body yields no event, or whose lines are mostly unreadable (binary data, a foreign format, "
            "a session format version the harness never wrote): one finding naming the cause, in place of a finding "
            "per line."
        ),
        rationale=(
            "A crash tears at most the last line; a file that is mostly not events was never a harness log, or is "
            "damaged beyond a torn tail. Read as a damaged tail it would pass the gate having checked nothing."
        ),
        example=(
            "not a readable session log: binary data, not text; 19 of 19 lines unreadable (lines 1..19), no event read"
        ),
        fires="at-end",
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
]
