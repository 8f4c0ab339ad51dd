"""The rows of the rules of the header, the requests, the prefix, forks, tokens and resumes."""

from __future__ import annotations

from invariants.model.rule import Rule

ROWS: list[Rule] = [
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
