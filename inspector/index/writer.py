"""The SQL writer: a folder's rows in the batch transaction, and the deletes that keep the tables consistent."""

from __future__ import annotations

import os
import sqlite3
import time
from typing import Callable, Iterable

import sqlite_utils

from . import rows as R
from .connection import inserted_id, now_iso
from .stats import IndexStats
from .work import GroupResult, SessionResult

BATCH_GROUPS = 64  # folders per transaction (a folder is never split)
BATCH_SECONDS = 0.5  # ...or this much writing, whichever comes first
STATUS_RANK_SQL = (
    "CASE {col} WHEN 'unchecked' THEN 0 WHEN 'ok' THEN 1 WHEN 'one-shot' THEN 1 WHEN 'header' THEN 2 ELSE 3 END"
)


# -- writing -------------------------------------------------------------------

_STEP_INSERT = (
    f"INSERT INTO steps(session_id, {', '.join(R.STEP_COLUMNS)}) VALUES ({', '.join('?' * (len(R.STEP_COLUMNS) + 1))})"
)
_STEP_UPDATE_COLS = [c for c in R.STEP_COLUMNS if c not in ("idx", "status", "requests")]
_STEP_UPDATE = (
    "UPDATE steps SET "
    + ", ".join(f"{c} = :c{i}" for i, c in enumerate(_STEP_UPDATE_COLS))
    + f", status = CASE WHEN {STATUS_RANK_SQL.format(col=':status')} > {STATUS_RANK_SQL.format(col='status')} "
    "THEN :status ELSE status END, requests = requests + :n WHERE session_id = :sid AND idx = :idx"
)
_STATUS_UPDATE = (
    f"UPDATE steps SET status = CASE WHEN {STATUS_RANK_SQL.format(col=':status')} > {STATUS_RANK_SQL.format(col='status')} "
    "THEN :status ELSE status END, requests = requests + :n WHERE session_id = :sid AND idx = :idx"
)
_FINDING_INSERT = (
    f"INSERT INTO findings(session_id, capture_id, request_line, source, {', '.join(R.FINDING_COLUMNS)}) "
    f"VALUES ({', '.join('?' * (len(R.FINDING_COLUMNS) + 4))})"
)
_SESSION_FACT_COLS = (
    "uid",
    "cwd",
    "created_at",
    "created",
    "parent_session",
    "seed_length",
    "owner",
    "era",
    "profile",
    "version",
    "compressed",
    "events",
    "turns",
    "steps",
    "chunks",
    "chunk_rows",
    "lines",
    "bytes",
    "instances",
    "versions",
    "compactions",
    "torn",
    "open_turn_at_end",
)


class _Writer:
    def __init__(
        self,
        db: sqlite_utils.Database,
        stats: IndexStats,
        run_id: int,
        after_folder: Callable[[int], None] | None = None,
    ) -> None:
        self.db = db
        self.conn = db.conn
        self.stats = stats
        self.run_id = run_id
        self.after_folder = after_folder  # called in each folder's own transaction (see build_index)
        self.written = 0
        self.in_batch = 0
        self.began = 0.0
        self.batch = 1 if after_folder is not None else BATCH_GROUPS

    def write(self, result: GroupResult) -> None:
        try:
            self._write(result)
        finally:
            result.sessions.discard()

    def _write(self, result: GroupResult) -> None:
        conn = self.conn
        if result.parsed:
            self.stats.parsed_groups += 1
        if not conn.in_transaction:
            conn.execute("BEGIN IMMEDIATE")
            self.began = time.monotonic()
            self.in_batch = 0
        try:
            if result.recheck_all:
                # Every capture of the folder is checked again in full: first forget what its lines said,
                # then write the statuses they say now (a reset after them wiped those too).
                conn.execute(
                    "UPDATE steps SET status = 'unchecked', requests = 0 WHERE session_id IN "
                    "(SELECT id FROM sessions WHERE dir = ?) AND (status != 'unchecked' OR requests != 0)",
                    [result.folder],
                )
            keys: dict[str, int] = {}
            touched: set[int] = set()
            for res in result.sessions:  # read once: a spilled folder's rows come from its file one at a time
                if res.problem:
                    self.stats.problems.append(res.problem)
                if res.action == "error":
                    continue
                sid = self._session(res)
                keys[res.path] = sid
                touched.add(sid)
            for cr in result.captures:
                if cr.problem:
                    self.stats.problems.append(cr.problem)
            folder_keys: dict[str, int] = {}
            if result.captures or result.recheck_all:
                folder_keys = {
                    p: k for p, k in conn.execute("SELECT path, id FROM sessions WHERE dir = ?", [result.folder])
                }
            folder_keys.update(keys)
            self._captures(result, folder_keys, touched)
            self._counts(touched)
            self.written += 1
            self.in_batch += 1
            if self.after_folder is not None:
                self.after_folder(self.written)
            if self.in_batch >= self.batch or time.monotonic() - self.began > BATCH_SECONDS:
                self.commit()
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self.stats.groups_written += 1

    def commit(self) -> None:
        """End the open batch: every folder in it becomes visible at once, or none does."""
        if self.conn.in_transaction:
            self.conn.execute("UPDATE runs SET groups_done = ? WHERE id = ?", [self.written, self.run_id])
            self.conn.execute("COMMIT")

    # -- one session -------------------------------------------------------------
    def _session(self, res: SessionResult) -> int:
        conn = self.conn
        row = conn.execute("SELECT id FROM sessions WHERE path = ?", [res.path]).fetchone()
        sid = row[0] if row else None
        if res.action == "context":
            assert sid is not None
            self._statuses(sid, res.step_status)
            return sid
        facts = res.facts
        st = res.stat
        values = {c: facts.get(c) for c in _SESSION_FACT_COLS}
        values.update(
            path=res.path,
            file=res.file,
            member=res.member,
            root=res.root,
            dir=os.path.dirname(res.file),
            size=st.size,
            mtime_ns=st.mtime_ns,
            inode=st.inode,
            device=st.device,
            revision=st.revision,
            head_hash=res.head_hash,
            tail_hash=res.tail_hash,
            resumable=int(res.checkpoint is not None),
            indexed_at=now_iso(),
            index_mode="append" if res.action == "append" else "full",
        )
        if res.action == "new":
            self.stats.new += 1
        elif res.action == "append":
            self.stats.appended += 1
        else:
            self.stats.replaced += 1
        if sid is None:
            values.update(requests=0, errors=0, warnings=0, infos=0)
            cols = list(values)
            cur = conn.execute(
                f"INSERT INTO sessions({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                [values[c] for c in cols],
            )
            sid = inserted_id(cur)
        else:
            if res.action != "append":
                _delete_session(conn, sid, keep_row=True)
            values["fork_checked"] = None
            cols = list(values)
            conn.execute(
                f"UPDATE sessions SET {', '.join(f'{c} = ?' for c in cols)} WHERE id = ?",
                [values[c] for c in cols] + [sid],
            )
        conn.executemany(
            f"INSERT OR IGNORE INTO headers({', '.join(R.HEADER_COLUMNS)}) VALUES ({', '.join('?' * len(R.HEADER_COLUMNS))})",
            res.headers,
        )
        conn.executemany("INSERT OR IGNORE INTO header_tools(hash, position, name) VALUES (?, ?, ?)", res.header_tools)
        conn.executemany(
            f"INSERT INTO versions(session_id, {', '.join(R.VERSION_COLUMNS)}) VALUES ({', '.join('?' * (len(R.VERSION_COLUMNS) + 1))})",
            [(sid, *r) for r in res.versions],
        )
        conn.execute("DELETE FROM instances WHERE session_id = ?", [sid])
        conn.executemany(
            f"INSERT INTO instances(session_id, {', '.join(R.INSTANCE_COLUMNS)}) VALUES ({', '.join('?' * (len(R.INSTANCE_COLUMNS) + 1))})",
            [(sid, *r) for r in res.instances],
        )
        status_i, requests_i = R.STEP_COLUMNS.index("status"), R.STEP_COLUMNS.index("requests")
        for r in res.steps_update:
            params = {f"c{i}": r[R.STEP_COLUMNS.index(c)] for i, c in enumerate(_STEP_UPDATE_COLS)}
            params.update(status=r[status_i], n=r[requests_i], sid=sid, idx=r[0])
            conn.execute(_STEP_UPDATE, params)
        self._statuses(sid, res.step_status)
        conn.executemany(_STEP_INSERT, [(sid, *r) for r in res.steps_new])
        self.stats.steps_added += len(res.steps_new)
        if res.cache is not None:
            conn.execute("DELETE FROM cache_steps WHERE session_id = ? AND idx >= ?", [sid, res.cache_start])
            conn.executemany(
                f"INSERT INTO cache_steps(session_id, {', '.join(R.CACHE_COLUMNS)}) "
                f"VALUES ({', '.join('?' * (len(R.CACHE_COLUMNS) + 1))})",
                [(sid, *r) for r in res.cache],
            )
        last_id = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0]
        conn.executemany(
            f"INSERT INTO messages(session_id, {', '.join(R.MESSAGE_COLUMNS)}) VALUES ({', '.join('?' * (len(R.MESSAGE_COLUMNS) + 1))})",
            [(sid, *r) for r in res.messages],
        )
        if res.messages:  # messages_fts has no triggers (see schema.FTS)
            conn.execute("INSERT INTO messages_fts(rowid, text) SELECT id, text FROM messages WHERE id > ?", [last_id])
        conn.executemany(
            f"INSERT INTO tool_calls(session_id, {', '.join(R.TOOL_CALL_COLUMNS)}) VALUES ({', '.join('?' * (len(R.TOOL_CALL_COLUMNS) + 1))})",
            [(sid, *r) for r in res.tool_calls],
        )
        conn.execute("DELETE FROM streams WHERE session_id = ? AND step_idx >= ?", [sid, res.cache_start])
        conn.executemany(
            f"INSERT INTO streams(session_id, {', '.join(R.STREAM_COLUMNS)}) "
            f"VALUES ({', '.join('?' * (len(R.STREAM_COLUMNS) + 1))})",
            [(sid, *r) for r in res.streams],
        )
        conn.execute("DELETE FROM findings WHERE session_id = ? AND source = 'log'", [sid])
        conn.executemany(_FINDING_INSERT, [(sid, None, None, "log", *r) for r in res.findings])
        if res.checkpoint is not None:
            conn.execute(
                "INSERT OR REPLACE INTO checkpoints(session_id, bytes_at, size, data) VALUES (?, ?, ?, ?)",
                [sid, res.bytes_at, len(res.checkpoint), res.checkpoint],
            )
        else:
            conn.execute("DELETE FROM checkpoints WHERE session_id = ?", [sid])
        conn.execute(
            "UPDATE sessions SET messages = (SELECT count(*) FROM messages WHERE session_id = :sid) WHERE id = :sid",
            {"sid": sid},
        )
        return sid

    def _statuses(self, sid: int, statuses: list[tuple]) -> None:
        self.conn.executemany(
            _STATUS_UPDATE, [{"status": status, "n": n, "sid": sid, "idx": idx} for idx, status, n in statuses]
        )

    # -- captures ------------------------------------------------------------------
    def _captures(self, result: GroupResult, keys: dict[str, int], touched: set[int]) -> None:
        conn = self.conn
        for path in result.gone_captures:
            self._drop_capture(path)
        if not result.captures and not result.recheck_all:
            return
        for cr in result.captures:
            if cr.action == "error":
                continue
            row = conn.execute("SELECT id FROM captures WHERE path = ?", [cr.path]).fetchone()
            st = cr.stat
            values = dict(
                path=cr.path,
                dir=os.path.dirname(cr.path),
                records=cr.records,
                checked_lines=cr.checked_lines,
                size=st.size,
                mtime_ns=st.mtime_ns,
                inode=st.inode,
                device=st.device,
                revision=st.revision,
                head_hash=cr.head_hash,
                tail_hash=cr.tail_hash,
                indexed_at=now_iso(),
            )
            cols = list(values)
            if row is None:
                cid = inserted_id(
                    conn.execute(
                        f"INSERT INTO captures({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                        [values[c] for c in cols],
                    )
                )
            else:
                cid = row[0]
                conn.execute(
                    f"UPDATE captures SET {', '.join(f'{c} = ?' for c in cols)} WHERE id = ?",
                    [values[c] for c in cols] + [cid],
                )
            if cr.all_lines:
                conn.execute("DELETE FROM findings WHERE capture_id = ?", [cid])
                conn.execute("DELETE FROM requests WHERE capture_id = ?", [cid])
            else:
                conn.execute("DELETE FROM findings WHERE capture_id = ? AND source = 'capture-file'", [cid])
                conn.executemany(
                    "DELETE FROM findings WHERE capture_id = ? AND source = 'capture' AND request_line = ?",
                    [(cid, ln) for ln in cr.rechecked],
                )
                conn.executemany(
                    "DELETE FROM requests WHERE capture_id = ? AND line = ?", [(cid, ln) for ln in cr.rechecked]
                )
            conn.executemany(_FINDING_INSERT, [(None, cid, f[4], "capture-file", *f) for f in cr.file_findings])
            req_rows = []
            for line, spath, *rest in cr.requests:
                req_rows.append((cid, line, keys.get(spath) if spath else None, *rest))
            conn.executemany(
                "INSERT INTO requests(capture_id, line, session_id, session_uid, step_idx, status, codes, model, log_length, "
                "turn, step, loop_built, time, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                req_rows,
            )
            frows = []
            for line, spath, f in cr.findings:
                sid = keys.get(spath) if spath else None
                if sid is not None:
                    touched.add(sid)
                frows.append((sid, cid, line, "capture", *f))
            conn.executemany(_FINDING_INSERT, frows)
        for k in set(keys.values()):
            conn.execute(
                "UPDATE sessions SET requests = (SELECT count(*) FROM requests WHERE session_id = :sid) WHERE id = :sid",
                {"sid": k},
            )
            touched.add(k)

    def _drop_capture(self, path: str) -> None:
        _drop_capture(self.conn, path)

    def _counts(self, sids: Iterable[int]) -> None:
        update_counts(self.conn, sids)


def update_counts(conn: sqlite3.Connection, sids: Iterable[int]) -> None:
    conn.executemany(
        "UPDATE sessions SET "
        "errors = (SELECT count(*) FROM findings WHERE session_id = :sid AND severity = 'error'), "
        "warnings = (SELECT count(*) FROM findings WHERE session_id = :sid AND severity = 'warning'), "
        "infos = (SELECT count(*) FROM findings WHERE session_id = :sid AND severity = 'info') WHERE id = :sid",
        [{"sid": s} for s in sids],
    )
    conn.executemany(
        "UPDATE sessions SET worst = CASE WHEN errors > 0 THEN 'error' WHEN warnings > 0 THEN 'warning' "
        "WHEN infos > 0 THEN 'info' END WHERE id = ?",
        [(s,) for s in sids],
    )


def _delete_session(conn: sqlite3.Connection, sid: int, keep_row: bool = False) -> None:
    conn.execute("UPDATE sessions SET parent_id = NULL, fork_checked = NULL WHERE parent_id = ?", [sid])
    conn.execute("UPDATE requests SET session_id = NULL WHERE session_id = ?", [sid])
    conn.execute("UPDATE findings SET session_id = NULL WHERE session_id = ? AND source = 'capture'", [sid])
    conn.execute(
        "INSERT INTO messages_fts(messages_fts, rowid, text) SELECT 'delete', id, text FROM messages "
        "WHERE session_id = ?",
        [sid],
    )
    for table in ("steps", "cache_steps", "versions", "instances", "messages", "tool_calls", "streams", "checkpoints"):
        conn.execute(f"DELETE FROM {table} WHERE session_id = ?", [sid])
    conn.execute("DELETE FROM findings WHERE session_id = ? AND source IN ('log', 'fork')", [sid])
    if not keep_row:
        conn.execute("DELETE FROM sessions WHERE id = ?", [sid])


def _drop_capture(conn: sqlite3.Connection, path: str) -> None:
    row = conn.execute("SELECT id FROM captures WHERE path = ?", [path]).fetchone()
    if row is None:
        return
    sids = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT session_id FROM findings WHERE capture_id = ? AND session_id IS NOT NULL", [row[0]]
        )
    ]
    conn.execute("DELETE FROM findings WHERE capture_id = ?", [row[0]])
    conn.execute("DELETE FROM requests WHERE capture_id = ?", [row[0]])
    conn.execute("DELETE FROM captures WHERE id = ?", [row[0]])
    update_counts(conn, sids)
