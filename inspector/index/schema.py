"""The index schema: tables, indexes, full-text search and views.

Everything here is plain SQLite (FTS5, JSON functions and window functions
are built into every current ``sqlite3`` shell and into Datasette), so the
file opens without this tool.  Tables are created with sqlite-utils; bulk
writes go through the same connection with ``executemany`` inside our own
transactions (sqlite-utils' insert helpers commit on their own, which would
break the one-transaction-per-folder rule).

Keys: ``sessions.id`` is an integer surrogate key, because a session id
written in a log header (``sessions.uid``) is not unique across a root
(copied logs, test fixtures).  Every child table refers to it as
``session_id``.
"""

from __future__ import annotations

import sqlite_utils

SCHEMA_VERSION = 4  # 2: the streams table (text streamed but held by no message); 3: cache_steps.tokens;
# 4: sessions.owner (a schema-18 store's session owner)

# (table, columns, pk, foreign keys, not_null)
TABLES: list[tuple[str, dict, object, list, set]] = [
    ("meta", {"key": str, "value": str}, "key", [], set()),
    (
        "runs",
        {
            "id": int,
            "started_at": str,
            "finished_at": str,
            "status": str,
            "paths": str,
            "pid": int,
            "sessions": int,
            "new": int,
            "appended": int,
            "replaced": int,
            "unchanged": int,
            "removed": int,
            "groups_done": int,
            "seconds": float,
        },
        "id",
        [],
        set(),
    ),
    (
        "headers",
        {
            "hash": str,
            "json": str,
            "model": str,
            "provider": str,
            "system_hash": str,
            "tools_hash": str,
            "prefix_hash": str,
            "suffix_hash": str,
            "config": str,
            "tools": int,
            "bytes": int,
        },
        "hash",
        [],
        {"json"},
    ),
    (
        "header_tools",
        {"hash": str, "position": int, "name": str},
        ("hash", "position"),
        [("hash", "headers", "hash")],
        set(),
    ),
    (
        "sessions",
        {
            "id": int,
            "uid": str,
            "path": str,
            "file": str,
            "member": str,
            "root": str,
            "dir": str,
            "cwd": str,
            "created_at": int,
            "created": str,
            "parent_session": str,
            "parent_id": int,
            "seed_length": int,
            "owner": str,
            "era": str,
            "profile": str,
            "version": str,
            "compressed": int,
            "events": int,
            "turns": int,
            "steps": int,
            "chunks": int,
            "chunk_rows": int,
            "lines": int,
            "bytes": int,
            "instances": int,
            "versions": int,
            "compactions": int,
            "messages": int,
            "torn": int,
            "open_turn_at_end": int,
            "requests": int,
            "errors": int,
            "warnings": int,
            "infos": int,
            "worst": str,
            "size": int,
            "mtime_ns": int,
            "inode": int,
            "device": int,
            "revision": str,
            "head_hash": str,
            "tail_hash": str,
            "resumable": int,
            "indexed_at": str,
            "index_mode": str,
            "fork_checked": str,
        },
        "id",
        [("parent_id", "sessions", "id")],
        {"uid", "path"},
    ),
    (
        "checkpoints",
        {"session_id": int, "bytes_at": int, "size": int, "data": bytes},
        "session_id",
        [("session_id", "sessions", "id")],
        set(),
    ),
    (
        "captures",
        {
            "id": int,
            "path": str,
            "dir": str,
            "records": int,
            "checked_lines": int,
            "size": int,
            "mtime_ns": int,
            "inode": int,
            "device": int,
            "revision": str,
            "head_hash": str,
            "tail_hash": str,
            "indexed_at": str,
        },
        "id",
        [],
        {"path"},
    ),
    (
        "versions",
        {
            "session_id": int,
            "idx": int,
            "seq": int,
            "line": int,
            "kind": str,
            "instance": int,
            "header_hash": str,
            "changed": str,
            "arms": str,
        },
        ("session_id", "idx"),
        [("session_id", "sessions", "id"), ("header_hash", "headers", "hash")],
        set(),
    ),
    (
        "instances",
        {
            "session_id": int,
            "idx": int,
            "seq": int,
            "line": int,
            "reason": str,
            "header_hash": str,
            "prefix_hash": str,
            "prev_prefix_hash": str,
            "prefix_drift": int,
            "drift": str,
            "first_step": int,
        },
        ("session_id", "idx"),
        [("session_id", "sessions", "id"), ("header_hash", "headers", "hash")],
        set(),
    ),
    (
        "steps",
        {
            "id": int,
            "session_id": int,
            "idx": int,
            "turn": int,
            "step": int,
            "seq": int,
            "line": int,
            "end_seq": int,
            "last_seq": int,
            "first_chunk_seq": int,
            "chunks": int,
            "instance": int,
            "version": int,
            "model": str,
            "header_hash": str,
            "prefix_hash": str,
            "system_hash": str,
            "tools_hash": str,
            "input_tokens": int,
            "output_tokens": int,
            "cache_read_tokens": int,
            "reasoning_tokens": int,
            "usage": str,
            "compaction_before": int,
            "status": str,
            "requests": int,
        },
        "id",
        [("session_id", "sessions", "id"), ("header_hash", "headers", "hash")],
        {"session_id", "idx"},
    ),
    (
        "cache_steps",
        {
            "session_id": int,
            "idx": int,
            "turn": int,
            "step": int,
            "seq": int,
            "bytes": int,
            "reused_bytes": int,
            "new_bytes": int,
            "repaid_bytes": int,
            "tokens_est": int,
            "reused_tokens_est": int,
            "repaid_tokens_est": int,
            "breaker": str,
            "breaker_detail": str,
            "config_changes": str,
            "input_tokens": int,
            "cache_read_tokens": int,
            "tokens": int,  # DeepSeek V4 count of the request (NULL without the tokens extra)
        },
        ("session_id", "idx"),
        [("session_id", "sessions", "id")],
        set(),
    ),
    (
        "requests",
        {
            "id": int,
            "capture_id": int,
            "line": int,
            "session_id": int,
            "session_uid": str,
            "step_idx": int,
            "status": str,
            "codes": str,
            "model": str,
            "log_length": int,
            "turn": int,
            "step": int,
            "loop_built": int,
            "time": int,
            "extra": str,
        },
        "id",
        [("capture_id", "captures", "id"), ("session_id", "sessions", "id")],
        {"capture_id", "line"},
    ),
    (
        "findings",
        {
            "id": int,
            "session_id": int,
            "capture_id": int,
            "request_line": int,
            "source": str,
            "rule": str,
            "category": str,
            "severity": str,
            "seq": int,
            "line": int,
            "turn": int,
            "step": int,
            "path": str,
            "file": str,
            "message": str,
            "detail": str,
        },
        "id",
        [("session_id", "sessions", "id"), ("capture_id", "captures", "id")],
        {"rule", "message"},
    ),
    (
        "messages",
        {
            "id": int,
            "session_id": int,
            "seq": int,
            "line": int,
            "step_idx": int,
            "role": str,
            "source": str,
            "text": str,
            "truncated": int,
        },
        "id",
        [("session_id", "sessions", "id")],
        {"session_id", "seq"},
    ),
    (
        "streams",
        {
            "id": int,
            "session_id": int,
            "step_idx": int,
            "attempt": int,
            "seq": int,
            "line": int,
            "text": str,
            "truncated": int,
        },
        "id",
        [("session_id", "sessions", "id")],
        {"session_id", "step_idx"},
    ),
    (
        "tool_calls",
        {
            "id": int,
            "session_id": int,
            "seq": int,
            "step_idx": int,
            "call_id": str,
            "name": str,
        },
        "id",
        [("session_id", "sessions", "id")],
        {"session_id", "seq"},
    ),
]

INDEXES: list[tuple[str, list[str], bool]] = [
    ("sessions", ["uid"], False),
    ("sessions", ["path"], True),
    ("sessions", ["parent_id"], False),
    ("sessions", ["parent_session"], False),
    ("sessions", ["created_at"], False),
    ("sessions", ["root"], False),
    ("sessions", ["dir"], False),  # a folder's sessions, asked for each folder with a capture
    ("captures", ["path"], True),
    ("steps", ["session_id", "idx"], True),
    ("steps", ["header_hash"], False),
    ("steps", ["model"], False),
    ("steps", ["status"], False),
    ("cache_steps", ["breaker"], False),
    ("header_tools", ["name"], False),
    ("requests", ["capture_id", "line"], True),
    ("requests", ["session_id"], False),
    ("requests", ["model"], False),
    ("findings", ["session_id"], False),
    ("findings", ["capture_id"], False),
    ("findings", ["rule"], False),
    ("findings", ["category"], False),
    ("messages", ["session_id", "seq"], True),
    ("tool_calls", ["session_id", "seq"], False),
    ("streams", ["session_id", "step_idx"], False),
    ("tool_calls", ["name"], False),
]

_DIVERGENCE = "('request-divergence', 'header-divergence', 'unexplained-request')"

VIEWS: dict[str, str] = {
    # One line per session with its parent's id, for humans and Datasette.
    "session_overview": """
SELECT s.id, s.uid, s.created, s.era, s.cwd, s.events, s.turns, s.steps, s.requests,
       s.errors, s.warnings, s.infos, s.worst, p.uid AS parent_uid, s.parent_id, s.seed_length, s.path
FROM sessions s LEFT JOIN sessions p ON p.id = s.parent_id""",
    # Which sessions diverged: request/header divergences and unexplained requests.
    "diverged_sessions": f"""
SELECT s.id AS session_id, s.uid, s.path,
       count(*) AS findings,
       sum(f.category = 'request-divergence') AS request_divergence,
       sum(f.category = 'header-divergence') AS header_divergence,
       sum(f.category = 'unexplained-request') AS unexplained,
       min(f.seq) AS first_seq,
       (SELECT f2.rule || ': ' || f2.message FROM findings f2
         WHERE f2.session_id = s.id AND f2.category IN {_DIVERGENCE}
         ORDER BY f2.seq, f2.id LIMIT 1) AS first_finding
FROM findings f JOIN sessions s ON s.id = f.session_id
WHERE f.category IN {_DIVERGENCE}
GROUP BY s.id""",
    "finding_counts": """
SELECT rule, category, severity, count(*) AS findings, count(DISTINCT session_id) AS sessions
FROM findings GROUP BY rule, category, severity""",
    # Where the prefix drifted: loop instances whose messagePrefix differs from the one before.
    "prefix_drift": """
SELECT i.session_id, s.uid, s.path, i.idx AS instance, i.seq, i.line, i.reason,
       i.prev_prefix_hash, i.prefix_hash, i.drift,
       (SELECT count(*) FROM steps st WHERE st.session_id = i.session_id AND st.instance = i.idx) AS steps_after
FROM instances i JOIN sessions s ON s.id = i.session_id
WHERE i.prefix_drift = 1""",
    # Any header field that changed at a loop instance boundary (resume, fork).
    "instance_drift": """
SELECT i.session_id, s.uid, s.path, i.idx AS instance, i.seq, i.reason, i.drift, i.prefix_drift
FROM instances i JOIN sessions s ON s.id = i.session_id
WHERE i.drift IS NOT NULL AND i.drift != '[]'""",
    # Which sessions forked from which (parent_id is NULL when the parent is not indexed).
    "forks": """
SELECT c.id AS child_id, c.uid AS child_uid, c.path AS child_path, c.seed_length,
       c.parent_session AS parent_uid, p.id AS parent_id, p.path AS parent_path,
       (SELECT count(*) FROM findings f WHERE f.session_id = c.id AND f.category = 'fork-seed'
         AND f.severity = 'error') AS seed_errors
FROM sessions c LEFT JOIN sessions p ON p.id = c.parent_id
WHERE c.parent_session IS NOT NULL""",
    # Fork and resume chains: every (session, ancestor) pair with its distance.
    "fork_chains": """
WITH RECURSIVE chain(session_id, ancestor_id, depth) AS (
  SELECT id, parent_id, 1 FROM sessions WHERE parent_id IS NOT NULL
  UNION ALL
  SELECT chain.session_id, s.parent_id, chain.depth + 1
  FROM chain JOIN sessions s ON s.id = chain.ancestor_id
  WHERE s.parent_id IS NOT NULL AND chain.depth < 64
)
SELECT chain.session_id, c.uid AS session_uid, chain.ancestor_id, a.uid AS ancestor_uid, chain.depth
FROM chain JOIN sessions c ON c.id = chain.session_id JOIN sessions a ON a.id = chain.ancestor_id""",
    # Which requests (steps) used a model; the recorded model is in requests.model.
    "model_usage": """
SELECT model, count(DISTINCT session_id) AS sessions, count(*) AS steps,
       sum(input_tokens) AS input_tokens, sum(cache_read_tokens) AS cache_read_tokens,
       sum(output_tokens) AS output_tokens
FROM steps GROUP BY model""",
    # Which requests offered a tool (from the header in force at dispatch).
    "step_tools": """
SELECT st.session_id, s.uid, st.id AS step_id, st.idx AS step_idx, st.turn, st.step, st.seq,
       st.model, ht.name AS tool
FROM steps st JOIN header_tools ht ON ht.hash = st.header_hash JOIN sessions s ON s.id = st.session_id""",
    # Which tools the model called, and how often.
    "tool_usage": """
SELECT name, count(*) AS calls, count(DISTINCT session_id) AS sessions FROM tool_calls GROUP BY name""",
    # Consecutive steps side by side: what the cache could reuse.
    "step_cache": """
SELECT st.session_id, st.id AS step_id, st.idx, st.turn, st.step, st.seq, st.instance, st.model,
       st.header_hash, st.prefix_hash, st.system_hash, st.tools_hash, st.compaction_before,
       st.input_tokens, st.cache_read_tokens,
       lag(st.model) OVER w AS prev_model,
       lag(st.header_hash) OVER w AS prev_header_hash,
       lag(st.prefix_hash) OVER w AS prev_prefix_hash,
       lag(st.system_hash) OVER w AS prev_system_hash,
       lag(st.tools_hash) OVER w AS prev_tools_hash,
       lag(st.cache_read_tokens) OVER w AS prev_cache_read_tokens,
       lag(st.idx) OVER w AS prev_idx
FROM steps st WHERE st.header_hash IS NOT NULL
WINDOW w AS (PARTITION BY st.session_id ORDER BY st.idx)""",
    # Where the cache broke: invariants.analysis.cache_report's breaker (the first byte the previous
    # request and this one disagree on, classified), or else a drop in the provider's
    # cacheReadTokens; with the bytes re-paid.
    "cache_breaks": """
SELECT * FROM (
  SELECT c.session_id, s.uid, s.path, st.id AS step_id, c.idx, c.turn, c.step, c.seq, st.instance,
    coalesce(c.breaker,
             CASE WHEN c.cache_read_tokens < lag(c.cache_read_tokens) OVER w THEN 'cache read dropped' END) AS reason,
    c.breaker_detail, c.bytes, c.reused_bytes, c.repaid_bytes, c.repaid_tokens_est,
    lag(c.cache_read_tokens) OVER w AS prev_cache_read_tokens, c.cache_read_tokens, c.input_tokens
  FROM cache_steps c JOIN sessions s ON s.id = c.session_id
  LEFT JOIN steps st ON st.session_id = c.session_id AND st.idx = c.idx
  WINDOW w AS (PARTITION BY c.session_id ORDER BY c.idx)
) WHERE reason IS NOT NULL""",
    # Per session: what the prompt cache saved and what breaks cost.
    "cache_summary": """
SELECT s.id AS session_id, s.uid, s.path, count(c.idx) AS steps, sum(c.bytes) AS bytes,
       sum(c.reused_bytes) AS reused_bytes,
       round(1.0 * sum(c.reused_bytes) / nullif(sum(c.bytes), 0), 4) AS reuse_ratio,
       sum(c.repaid_bytes) AS repaid_bytes, sum(c.repaid_tokens_est) AS repaid_tokens_est,
       count(c.breaker) AS breaks, sum(c.input_tokens) AS input_tokens, sum(c.cache_read_tokens) AS cache_read_tokens
FROM sessions s JOIN cache_steps c ON c.session_id = s.id GROUP BY s.id""",
    # The same question from the header hashes alone (no rebuilt requests needed).
    "header_changes": """
SELECT * FROM (
  SELECT c.session_id, s.uid, s.path, c.step_id, c.idx, c.turn, c.step, c.seq, c.instance,
    CASE
      WHEN c.prev_model IS NOT c.model THEN 'model changed'
      WHEN c.prev_prefix_hash IS NOT c.prefix_hash THEN 'prefix changed'
      WHEN c.prev_system_hash IS NOT c.system_hash THEN 'system changed'
      WHEN c.prev_tools_hash IS NOT c.tools_hash THEN 'tools changed'
      WHEN c.prev_header_hash IS NOT c.header_hash THEN 'config changed'
    END AS reason,
    c.prev_header_hash, c.header_hash
  FROM step_cache c JOIN sessions s ON s.id = c.session_id
  WHERE c.prev_idx IS NOT NULL
) WHERE reason IS NOT NULL""",
}

# (table, columns, triggers).  findings_fts is kept by sqlite-utils' triggers.  messages_fts
# (external content, no triggers) is kept by the indexer with one INSERT ... SELECT per
# session, about 3x faster than a trigger per row on megabytes of message text; a tool
# that edits ``messages`` by hand must run ``INSERT INTO messages_fts(messages_fts)
# VALUES ('rebuild')``.  streams_fts (few rows: only streams no message holds) has triggers.
FTS: list[tuple[str, list[str], bool]] = [
    ("messages", ["text"], False),
    ("findings", ["message"], True),
    ("streams", ["text"], True),
]


def create_schema(db: sqlite_utils.Database) -> None:
    """Create every table, index, FTS table and view that is missing."""
    for name, columns, pk, fks, not_null in TABLES:
        if not db[name].exists():
            db.table(name).create(columns, pk=pk, foreign_keys=fks or None, not_null=not_null or None)
    for table, cols, unique in INDEXES:
        db.table(table).create_index(cols, unique=unique, if_not_exists=True)
    for table, cols, triggers in FTS:
        if not db[f"{table}_fts"].exists():
            db.table(table).enable_fts(cols, create_triggers=triggers, tokenize="unicode61")
    for name, sql in VIEWS.items():
        db.create_view(name, sql.strip(), replace=True)
    db.table("meta").insert({"key": "schema_version", "value": str(SCHEMA_VERSION)}, replace=True)
