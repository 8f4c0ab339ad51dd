"""The rule table: code, category, default severity, rationale and example.

Every finding the library emits names a code from this table, so the table is
the single place where a rule is documented (``inspector rules`` prints it,
docs/RULES.md is generated from it).  Checks look up severity and category
here instead of hard-coding them, which is what lets configuration override a
severity without touching the checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from invariants.model.record import FrozenRecord

if TYPE_CHECKING:
    from invariants.model.findings import Finding


class Rule(FrozenRecord):
    code: str
    name: str
    category: str
    severity: str
    summary: str
    rationale: str
    example: str
    __slots__ = ("code", "name", "category", "severity", "summary", "rationale", "example")

    def __init__(
        self, code: str, name: str, category: str, severity: str, summary: str, rationale: str, example: str = ""
    ) -> None:
        self._init(code, name, category, severity, summary, rationale, example)


_TABLE: list[Rule] = [
    # ---- log-integrity -------------------------------------------------
    Rule(
        "LOG001",
        "invalid-json",
        "log-integrity",
        "error",
        "A line is not valid JSON.",
        "The harness refuses to load a log with an unparsable line before its last committed turn/end; "
        "every event after it is lost to a resume.",
        'line 12: {"type":"turn/end","seq":11,',
    ),
    Rule(
        "LOG002",
        "bad-envelope",
        "log-integrity",
        "error",
        "A line is JSON but not a valid event envelope (not an object, missing or mistyped type/seq/time/data, extra "
        "keys).",
        "Seed loading (assertSessionEventEnvelope) rejects such a line, so the log cannot be resumed.",
        '{"type":"turn/start","seq":"3","time":1,"data":{}}  (seq is a string)',
    ),
    Rule(
        "LOG003",
        "seq-gap",
        "log-integrity",
        "error",
        "Event seqs are not contiguous from 0 (a gap, a repeat or a step back).",
        "Replay equivalence rests on seq == index; the harness rejects a seed that breaks it.",
        "seq 40 follows seq 38",
    ),
    Rule(
        "LOG004",
        "torn-tail",
        "log-integrity",
        "warning",
        "The log ends in a crash-truncated tail: a fragment without newline, an unparsable or gapped last line after "
        "the last committed turn/end.",
        "The harness cuts such a tail and repairs the open turn on the next load; the events in it are lost, "
        "which explains a missing step but is not a harness bug.",
        'last line: {"type":"assistant/chu',
    ),
    Rule(
        "LOG005",
        "bad-session-header",
        "log-integrity",
        "error",
        'The first line is missing, unparsable, not type "session", has the wrong version or malformed fields.',
        "Without a valid session header the harness refuses the whole file.",
        '{"type":"session","version":1,"id":"x"}',
    ),
    Rule(
        "LOG006",
        "open-turn-at-end",
        "log-integrity",
        "info",
        "The log ends inside an open turn (no turn/end): the process stopped mid-turn.",
        "On the next load the harness appends synthetic closers (error tool results, step/end, turn/end{interrupted}); "
        "the requests of that turn may never have completed.",
        "last event is assistant/chunk of turn 4, step 2",
    ),
    Rule(
        "LOG014",
        "interrupted-turn-repaired",
        "log-integrity",
        "info",
        "A turn ended with reason interrupted: the harness repaired a crashed turn on load (synthetic closers).",
        "The requests of that turn may never have completed; tool calls in it got synthetic error results.",
        '{"type":"turn/end","data":{"turn":2,"reason":{"kind":"interrupted"}}}',
    ),
    Rule(
        "LOG007",
        "unknown-event-type",
        "log-integrity",
        "error",
        "A late-era log holds an event type the harness does not know, without `ignorable: true`.",
        "From da29b86834 on the harness refuses a log with an unknown, non-ignorable event type.",
        '{"type":"plugin/thing","seq":9,...}',
    ),
    Rule(
        "LOG008",
        "oversized-line",
        "log-integrity",
        "error",
        "A line is larger than the configured limit and was not parsed.",
        "A single huge line is either corruption or an attack; skipping it keeps memory bounded.",
        "line 88 is 60 MB",
    ),
    Rule(
        "LOG009",
        "zstd-frame",
        "log-integrity",
        "error",
        "A zstd frame is corrupt (checksum or decompression failure) or the file has no complete header frame.",
        "The harness refuses to load a compressed log with a broken complete frame.",
        "frame 14 at byte 90112: checksum mismatch",
    ),
    Rule(
        "LOG010",
        "torn-zstd-frame",
        "log-integrity",
        "warning",
        "A .jsonl.zstd log ends inside its last frame (EOF mid-frame).",
        "The harness keeps the complete lines of that frame and rewrites it on the next load; later lines are lost.",
        "EOF inside frame 31",
    ),
    Rule(
        "LOG011",
        "mixed-era",
        "log-integrity",
        "warning",
        "A log shows shapes of more than one format era.",
        "The checker picks one profile; events of the other era may be judged by the wrong rules.",
        "a request/header-delta in a log with packed chunk rows",
    ),
    Rule(
        "LOG012",
        "bad-chunk-row",
        "log-integrity",
        "error",
        "A packed chunk row (text-chunks, reasoning-chunks, tool-call-chunks) is malformed.",
        "The harness's row decoder throws on a bad row and the log fails to load.",
        '{"type":"text-chunks","seq0":5,"time0":1,"data":{"dt":[],"texts":[]}}',
    ),
    Rule(
        "LOG015",
        "snapshot-fixture",
        "log-integrity",
        "info",
        'A scrubbed test fixture (its header cwd is a normaliser placeholder such as "{{cwd}}"): seq gaps, events '
        "outside their turn/step framing and sourceEventSeqs into trimmed events are reported here instead of as "
        "errors.",
        "The harness never writes a relative cwd; such a file was rewritten by its snapshot tooling and is consumed as "
        "a "
        "model-replay script (dsh-llm-replay reads only the chunks), which tests trim and extend by hand.",
        '{"type":"session","cwd":"{{cwd}}",...} with chunks of turn 2 and no turn/start',
    ),
    Rule(
        "LOG016",
        "sqlite-row",
        "log-integrity",
        "error",
        "A row of a SQLite session database cannot be decoded (a data BLOB that is not zstd, a malformed "
        "source_event_seqs varint BLOB, a bad ignorable value).",
        "The harness's SQLite backend throws on such a row: fatal before the last committed turn/end, a torn tail "
        "after it.",
        "row seq 12: source_event_seqs: truncated varint",
    ),
    Rule(
        "LOG017",
        "late-header-field",
        "log-integrity",
        "warning",
        "A late-era JSONL session header lacks a field HEAD's reader requires (delegationDepth) or carries one it "
        "refuses (a retired sandboxMode/approvalPolicy, an origin other than subagent).",
        "HEAD's JSONL backend rejects such a header (isHeaderLine / fromHeaderLine): the log was written before "
        "0d00106fa8 or by another writer, and a current harness cannot resume it.",
        '{"type":"session","version":0,"id":"s","createdAt":1}  (no delegationDepth)',
    ),
    Rule(
        "LOG018",
        "mixed-log-forms",
        "log-integrity",
        "error",
        "A log mixes the runtime form (every body line carries seq and time) and the projected snapshot form "
        "(committed fixtures: body lines without seq/time, seq0/time0 on packed rows); one finding per log.",
        "Upstream writes a snapshot fixture wholly projected and a runtime log never projected; its replay parser "
        "(parseSessionLog) fills in only a missing envelope, so a mixed file is read, but its seqs no longer say "
        "what the runtime wrote.",
        'line 2 {"type":"turn/start","data":{...}} then line 3 {"type":"step/start","seq":1,"time":5,"data":{...}}',
    ),
    Rule(
        "LOG013",
        "bad-capture-line",
        "log-integrity",
        "error",
        "A line of the capture file is not a JSON object with a request object.",
        "A recorded request that cannot be read cannot be checked.",
        "requests.jsonl line 3: [1,2,3]",
    ),
    # ---- event-contract --------------------------------------------------
    Rule(
        "EVT001",
        "surface-meta-on-log-only",
        "event-contract",
        "error",
        "A non-surface event carries surfaceOp or sourceEventSeqs.",
        "Only surface events shape the model-visible history; metadata elsewhere means a writer bypassed the typed "
        "append.",
        '{"type":"turn/start",...,"surfaceOp":"append"}',
    ),
    Rule(
        "EVT002",
        "surface-op-missing",
        "event-contract",
        "error",
        "A surface event (user/assistant/tool-result/context/steering message) has no valid surfaceOp.",
        "Without a surfaceOp the event never reaches the surface, so it silently drops out of every later request.",
        '{"type":"user/message","seq":1,...}  (no surfaceOp)',
    ),
    Rule(
        "EVT003",
        "source-seqs-invalid",
        "event-contract",
        "error",
        "sourceEventSeqs is empty, has duplicates, or names a seq that is not an earlier event.",
        "Provenance links must point backwards at real events, or replay cannot attribute derived content.",
        '"sourceEventSeqs":[12] on seq 10',
    ),
    Rule(
        "EVT004",
        "replace-range-invalid",
        "event-contract",
        "error",
        "A surface replace names a start or end that is not on the surface, or start lies after end.",
        "The harness's surface fold throws; any derivation past this point is undefined.",
        '"surfaceOp":{"op":"replace","start":7,"end":3}',
    ),
    Rule(
        "EVT005",
        "replace-provenance",
        "event-contract",
        "error",
        "A surface replace does not list every shadowed surface node in sourceEventSeqs.",
        "Compaction must say what it shadowed so the original history stays attributable.",
        "replace of [4..9] with sourceEventSeqs [4,9]",
    ),
    Rule(
        "EVT006",
        "turn-order",
        "event-contract",
        "error",
        "turn/start or turn/end out of order: a turn opened while one is open, a wrong number, or a close with a step "
        "open.",
        "Turns are the commit unit of the log; misnumbered turns break resume and step attribution.",
        "turn/start 3 while turn 2 is still open",
    ),
    Rule(
        "EVT007",
        "step-order",
        "event-contract",
        "error",
        "step/start in the wrong turn, while a step is open, or with the wrong number.",
        "Requests are anchored at step/start; a misplaced one moves the request boundary.",
        "step/start 3 expected step 2",
    ),
    Rule(
        "EVT008",
        "step-scope",
        "event-contract",
        "error",
        "A step-scoped event (chunk, assistant message, tool call/result, step/end) names a (turn, step) that is not "
        "the open one.",
        "Streamed content attributed to the wrong step corrupts the derivation of the next request.",
        "assistant/message names turn 2/step 1 but open is turn 2/step 2",
    ),
    Rule(
        "EVT009",
        "tool-result-unpaired",
        "event-contract",
        "error",
        "A tool/result has no pending tool/call with its callId in the same step (crash-repair results excepted).",
        "The model would see a result for a call it never made in this step.",
        "tool/result for call_7 with no prior tool/call in this step",
    ),
    Rule(
        "EVT010",
        "outside-turn",
        "event-contract",
        "error",
        "An event that must be turn-enclosed appears outside any open turn.",
        "The log's commit unit is the turn: a bare event between turns is dropped by the harness on reload.",
        "todo/write between turn/end 2 and turn/start 3",
    ),
    Rule(
        "EVT011",
        "bad-event-data",
        "event-contract",
        "error",
        "A known event type carries data of the wrong shape (e.g. a non-integer turn, content that is not an array, "
        "a turn/end reason without a string kind, a late-era message without an id or with the wrong role).",
        "The harness's typed readers would throw or mis-project such an event; HEAD's load path refuses it.",
        '{"type":"step/start","data":{"turn":"1","step":1}}',
    ),
    Rule(
        "EVT012",
        "turn-closed-after-step-failure",
        "event-contract",
        "warning",
        "Late era: a turn/end with reason error or aborted while a step is still open.",
        "The late-era loop (agent.ts) always appends step/end before turn/end; when that step/end append is itself "
        "rejected, the failure ends the turn in error (aborted when cancelled) with the step left open. The store "
        "accepts the log; HEAD's dev-mode session invariant would flag it. A completed, max-tokens or blocked turn "
        "with a step open has no such path and stays EVT006.",
        'step/start 1/1 ... turn/end {"turn":1,"reason":{"kind":"error",...}} with no step/end',
    ),
    Rule(
        "EVT013",
        "unknown-value",
        "event-contract",
        "warning",
        "An enumerated field holds a value its era's format does not define (a turn/end reason kind, a message "
        "source kind, a content block or stream chunk type, a finish reason, a todo status, a trigger kind, an inbox "
        "target); the finding names the field and the allowed values.",
        "The store keeps any lossless JSON and most of these unions are merge-extensible, so the log still loads; but "
        "no part of the harness of that era writes the value, and every consumer that switches on it falls through: "
        "a foreign writer, a plugin's own kind, or a typo.",
        '{"type":"turn/end","data":{"turn":2,"reason":{"kind":"weird"}}}',
    ),
    # ---- header-codec ------------------------------------------------------
    Rule(
        "HDR001",
        "delta-before-snapshot",
        "header-codec",
        "error",
        "A request/header-delta appears before any request/header snapshot.",
        "foldRequestHeader throws on it: the log is corrupt and no request after it can be reconstructed.",
        "request/header-delta at seq 4, first snapshot at seq 20",
    ),
    Rule(
        "HDR002",
        "delta-does-not-apply",
        "header-codec",
        "error",
        "A delta arm cannot apply cleanly to the header in force (keepStart+keepEnd beyond the prompt, removing or "
        "changing a missing tool, adding an existing one).",
        "The harness's apply silently produces a different header than the writer meant; every later request inherits "
        "it.",
        '{"tools":{"added":[],"removed":["grep"],"changed":[]}} with no grep in force',
    ),
    Rule(
        "HDR003",
        "delta-not-canonical",
        "header-codec",
        "warning",
        "A delta does not re-diff to itself: diff(prev, apply(prev, delta)) is a different payload.",
        "The harness writer only logs diffHeader output; a different encoding means another writer or a hand edit.",
        'system arm {"keepStart":0,"keepEnd":0,"insert":["A","B"]} where line A was unchanged',
    ),
    Rule(
        "HDR004",
        "delta-empty",
        "header-codec",
        "warning",
        "A delta is empty or changes nothing.",
        "The loop writes nothing when the header is unchanged; a no-op delta means the equality check was bypassed.",
        '{"type":"request/header-delta","data":{}}',
    ),
    Rule(
        "HDR005",
        "snapshot-not-canonical",
        "header-codec",
        "warning",
        'A snapshot carries empty fields that canonical form drops (system "", tools [], messagePrefix []).',
        "Loop-written snapshots are canonical; empty-vs-absent is one state and a writer that distinguishes them will "
        "diverge.",
        '{"header":{"config":{"model":"m"},"system":""},"reason":"initial"}',
    ),
    Rule(
        "HDR006",
        "header-shape",
        "header-codec",
        "error",
        "A header snapshot or delta payload has the wrong shape (no config object, an arm of the wrong type, unknown "
        "arm).",
        "The fold cannot interpret it; the header in force after it is unknown.",
        '{"system":"new prompt"}  (a delta arm must be {keepStart, keepEnd, insert})',
    ),
    Rule(
        "HDR007",
        "initial-after-headers",
        "header-codec",
        "error",
        'A request/header with reason "initial" on a log that already had header events.',
        "A loop instance writes initial only on a header-less log; otherwise it must anchor with resume.",
        "second initial snapshot at seq 120",
    ),
    Rule(
        "HDR008",
        "resume-without-headers",
        "header-codec",
        "error",
        'A request/header with reason "resume" on a log that had no header event before.',
        "resume anchors a new loop instance on a log that already has a fold; with none, initial is required.",
        "first header event of the log has reason resume",
    ),
    Rule(
        "HDR009",
        "instance-without-anchor",
        "header-codec",
        "error",
        "A loop instance's first header event is a delta or a non-anchor snapshot (the session start or a fork "
        "boundary must be followed by initial/resume).",
        "Each instance anchors the header it builds from; without the anchor the fold carries the previous process's "
        "header.",
        "forked child's first own step logs a request/header-delta",
    ),
    Rule(
        "HDR010",
        "header-outside-step",
        "header-codec",
        "error",
        "A header event is not between its step's step/start and the step's first assistant/chunk.",
        "The header is logged just before dispatch; elsewhere it cannot govern the request it should describe.",
        "request/header after assistant/chunk seq 40 in turn 2/step 1",
    ),
    Rule(
        "HDR011",
        "unknown-reason",
        "header-codec",
        "error",
        "A request/header snapshot carries a reason that its era does not write.",
        "initial/resume/fallback (seed) and initial/resume/change (late) are the only reasons; others are foreign "
        "writers.",
        '"reason":"refresh"',
    ),
    Rule(
        "HDR012",
        "late-era-delta",
        "header-codec",
        "error",
        "A request/header-delta in a late-era log.",
        'From 1123e946c0 the harness rejects the whole log ("unsupported legacy request/header-delta format").',
        "request/header-delta in a log with delegationDepth",
    ),
    Rule(
        "HDR013",
        "fallback-expressible",
        "header-codec",
        "info",
        "A fallback snapshot whose change a round-tripping delta could have expressed.",
        "The writer falls back only when the delta fails its round-trip guard; otherwise it is a larger log than "
        "needed.",
        "fallback that only changes temperature",
    ),
    Rule(
        "HDR014",
        "fallback-snapshot",
        "header-codec",
        "info",
        "A fallback snapshot: the header changed in a way the delta encoding cannot express (a pure tool reorder, a "
        "tool inserted mid-list).",
        "Normal harness behaviour, shown so a header change in the timeline has its cause; a reorder also changes the "
        "request bytes.",
        'tools [read, bash] -> [bash, read] logged as {"reason":"fallback"}',
    ),
    Rule(
        "HDR015",
        "anchor-reason",
        "header-codec",
        "warning",
        "Late era: an initial snapshot on a log that already has a header fold, or a resume snapshot on one without.",
        "HEAD's loop writes initial exactly when the log has no header yet and resume otherwise (agent.ts "
        "buildRequest); "
        "the loader accepts either, so the request is still explained, but another writer chose the reason.",
        'request/header {reason:"initial"} at seq 8 after one at seq 3',
    ),
    # ---- unexplained-request ------------------------------------------------
    Rule(
        "REQ001",
        "step-without-header",
        "unexplained-request",
        "error",
        "A step dispatched a request (it streamed) but no header was in force.",
        "The log cannot explain the request's model, system or tools: the reconstruction promise is broken.",
        "assistant/chunk in turn 1/step 1 and no request/header before it",
    ),
    Rule(
        "REQ002",
        "request-without-step",
        "unexplained-request",
        "error",
        "A recorded loop-built request has no step/start before its position in the log.",
        "The request boundary is the last step/start; with none the messages cannot be derived.",
        "logLength 2 and the first step/start is seq 5",
    ),
    Rule(
        "REQ003",
        "request-without-header",
        "unexplained-request",
        "error",
        "A recorded loop-built request has no header event before its position in the log.",
        "With no fold the request's non-content half is unexplained.",
        "logLength 3, first request/header at seq 5",
    ),
    Rule(
        "REQ004",
        "request-without-session",
        "unexplained-request",
        "error",
        "A recorded request names a session (or position) that no checked log explains.",
        "A request that no log explains is exactly what the reconstruction promise forbids.",
        "sessionId abc in requests.jsonl; no abc.jsonl",
    ),
    Rule(
        "REQ005",
        "request-beyond-log",
        "unexplained-request",
        "error",
        "A recorded request's logLength exceeds the events in its log.",
        "The log ends before the request was sent: it was truncated or the capture belongs to a different run.",
        "logLength 120, log has 97 events",
    ),
    # ---- request-divergence --------------------------------------------------
    Rule(
        "DIV001",
        "messages-diverge",
        "request-divergence",
        "error",
        "A recorded request's messages differ from messagePrefix + derive(events before step/start) (+ messageSuffix).",
        "This is the dev invariant the harness enforces live: the request is not a pure function of the log.",
        'messages[3].content[0].text: expected "ls", recorded "ls -la"',
    ),
    Rule(
        "DIV002",
        "key-order-only",
        "request-divergence",
        "warning",
        "A recorded request equals the reconstruction structurally but differs in object key order.",
        "The bytes differ, which busts provider prefix caches even though the content is the same.",
        'messages[2].content[0]: keys ["text","type"] vs ["type","text"]',
    ),
    # ---- header-divergence ---------------------------------------------------
    Rule(
        "DIV010",
        "header-field-diverges",
        "header-divergence",
        "error",
        "A recorded request's model, system, tools, temperature, maxTokens, stop (late era: provider, reasoningEffort) "
        "differ from the folded header.",
        "The header fold is the log's account of the call config; a mismatch means a change that was never logged.",
        "temperature: header 0.2, recorded 0.7",
    ),
    Rule(
        "DIV011",
        "unexplained-field",
        "header-divergence",
        "warning",
        "A recorded request carries a field the log has no account of.",
        "Anything sent to the provider that the log cannot reproduce breaks replay.",
        '"topP":0.9 in the recorded request',
    ),
    # ---- prefix-instability / drift -------------------------------------------
    Rule(
        "PFX001",
        "prefix-changed-in-instance",
        "prefix-instability",
        "error",
        "messagePrefix changed inside one loop instance (by a delta or a fallback snapshot).",
        "The session prefix is composed once per instance; a change mid-instance rewrites the start of every request "
        "and busts the cache.",
        "request/header-delta {messagePrefix:[...]} at seq 88, instance anchored at seq 3",
    ),
    Rule(
        "PFX002",
        "prefix-drift-at-resume",
        "prefix-drift",
        "warning",
        "messagePrefix differs across a resume (the new instance composed a different prefix).",
        "Attributable drift: requests before the resume start with the old prefix, after it with the new one; the "
        "provider cache is lost once.",
        "resume at seq 120: messagePrefix[0].content[0].text changed",
    ),
    Rule(
        "PFX003",
        "header-drift-at-resume",
        "prefix-drift",
        "info",
        "system, tools or config differ across a resume.",
        "A new process assembled a different header; expected after upgrades, worth knowing when caches miss.",
        "resume at seq 120: tools changed (added grep)",
    ),
    # ---- fork-seed ------------------------------------------------------------
    Rule(
        "FRK001",
        "seed-mismatch",
        "fork-seed",
        "error",
        "A forked child's first seedLength events differ from its parent's log.",
        "The child's seed must be the parent's events copied verbatim, or the child's history is not the parent's.",
        "child seq 12 differs from parent seq 12",
    ),
    Rule(
        "FRK002",
        "seed-boundary",
        "fork-seed",
        "error",
        "A forked child's seed does not end on a closed turn (seed era: its last event must be turn/end).",
        "A fork inside an open turn would copy a half-finished step into the child.",
        "seedLength 37 and seq 36 is assistant/message",
    ),
    Rule(
        "FRK003",
        "parent-not-found",
        "fork-seed",
        "info",
        "A forked child's parent log is not among the checked logs, so the seed was not compared.",
        "The fork-seed check needs both logs.",
        "parentSession abc, no abc.jsonl beside the child",
    ),
    Rule(
        "FRK004",
        "seed-too-long",
        "fork-seed",
        "error",
        "seedLength exceeds the number of events in the child's (or the parent's) log.",
        "The seed cannot be longer than what was copied.",
        "seedLength 40 on a 12-event log",
    ),
    # ---- token-accounting / context-pressure (need the tokenizer: `inspector check --tokens`) ----
    Rule(
        "TOK001",
        "usage-mismatch-hint",
        "token-accounting",
        "warning",
        "The provider's input count (inputTokens + cacheReadTokens) departs from the tokens of the rebuilt request "
        "by more than the session's steady difference allows: the log does not explain what was sent.",
        "Without a recorded request the provider's usage is the only witness of what the loop sent. Real usage keeps a "
        "steady difference from our count (template tokens, a header recorded differently); a jump at one step means a "
        "message was sent that the log lacks, or one the log has was not sent. Mock usage (10, 20, ...) is recognised "
        "and never compared. A hint, never an error: it cannot say which message.",
        "step 4.2: provider counted 3,091 input tokens, the log implies 2,640: about 450 tokens were sent that the "
        "log does not explain",
    ),
    Rule(
        "CTX001",
        "request-over-window",
        "context-pressure",
        "warning",
        "A request is larger than the model's context window (request/context.contextWindow, the configured "
        "per-model table or --context-window) and the log shows no answer to it.",
        "A provider refuses a request over its window; the loop only recovers when compaction runs on the overflow.",
        "step 3.1: the request is about 2,140 tokens by the DeepSeek V4 tokenizer, over the 128-token context window",
    ),
    Rule(
        "CTX002",
        "over-window-handled",
        "context-pressure",
        "info",
        "A request is larger than the context window, and the log shows what became of it: the provider refused it "
        "and a compaction inside the step recovered, or the provider answered it anyway.",
        "The overflow happened and was handled (or the provider counts differently, e.g. a test adapter); worth "
        "knowing when a session's cost or latency jumps.",
        "step 3.1: ... over the 128-token context window; the provider refused it (CONTEXT_WINDOW_EXCEEDED), then "
        "a compaction at seq 21 recovered the step",
    ),
    Rule(
        "CTX003",
        "over-threshold-no-compaction",
        "context-pressure",
        "info",
        "A request is at or over the compaction threshold (80% of the window by default) and no compaction ran in "
        "the agent/pre-step before it.",
        "The harness gates compaction on its own estimate, not on this tokenizer, so this is not proof of a bug; a "
        "run of such steps reaches the window soon. One finding per run of steps.",
        "step 1.5: the request is about 340 tokens ..., at or over the compaction threshold of 320",
    ),
    Rule(
        "CTX004",
        "under-gate",
        "context-pressure",
        "warning",
        "The first request of a resumed or forked loop instance crosses the compaction threshold only because its "
        "prefix grew: with the previous instance's folded prefix it would not have, and no compaction ran.",
        "The pressure gate runs in agent/pre-step, before the new instance logs its header, so it reads the previous "
        "instance's prefix and under-counts a grown one: it skips compaction and ships an over-threshold (or "
        "over-window) first request.",
        "step 7.1: about 1,050 tokens against a threshold of 1,024 on the first request of a new instance whose prefix "
        "grew by 60 tokens: the gate counts about 990",
    ),
    # ---- resume (needs a previous observation: `inspector check --ledger FILE`) ----
    Rule(
        "RSM001",
        "log-rewritten",
        "log-integrity",
        "error",
        "A log no longer begins with what a previous check recorded for it in the ledger (--ledger): it was rewritten, "
        "not appended to, "
        "so a later resume continues a history that is not the previous instance's log.",
        "A resume seeds the new instance with the whole stored log and only appends (a crash repair only cuts a torn "
        "tail); a consistent "
        "rewrite of earlier events leaves no trace inside one log, so the ledger keeps the byte count and SHA-256 each "
        "check saw.",
        "ledger: 112 events, 48213 bytes, sha256 3f1c...; now the first 48213 bytes differ and a resume follows at seq "
        "140",
    ),
]

RULES: dict[str, Rule] = {r.code: r for r in _TABLE}
assert len(RULES) == len(_TABLE), "duplicate rule code"


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
