"""Planning a run: which folders changed since the stored revisions, and what their workers need."""

from __future__ import annotations

import os
from typing import Iterator

import sqlite_utils

from invariants.model.registry import rules_where
from invariants.read.capture import FolderNames, capture_of
from invariants.read.source import LogSource, UrlPath, is_url, log_path

from .found import FoundLogs
from .stats import IndexStats
from .work import CaptureTask, GroupTask, LogTask, Previous, Stat, source_stat


def input_name(p: str | os.PathLike) -> str:
    """How a path given to the index is kept: made absolute, or a URL as written (less trailing slashes)."""
    return UrlPath.of(str(p)).url if is_url(p) else os.path.abspath(p)


def _is_dir(name: str) -> bool:
    try:
        return log_path(name).is_dir()
    except OSError:  # an unusable URL: discovery has said so
        return False


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


# -- planning ------------------------------------------------------------------


# Findings replay() adds after the fold: a resumed replay does not redo them, so they are carried over.
_CARRIED = sorted(rules_where(fires="after-fold"))


_IN = 500  # paths a query names at a time (SQLite's limit on bound values is 999 on older builds)


def _previous_logs(db: sqlite_utils.Database, paths: list[str]) -> dict[str, tuple]:
    """The stored rows of the logs ``paths`` (those indexed before)."""
    return _rows(
        db,
        "SELECT path, id, size, mtime_ns, inode, device, lines, steps, versions, head_hash, tail_hash, "
        "turns, compactions FROM sessions WHERE path IN ({})",
        paths,
    )


def _previous_captures(db: sqlite_utils.Database, paths: list[str]) -> dict[str, tuple]:
    """The stored rows of the captures ``paths`` (those indexed before)."""
    return _rows(
        db,
        "SELECT path, id, size, mtime_ns, inode, device, head_hash, tail_hash, checked_lines, dir FROM captures "
        "WHERE path IN ({})",
        paths,
    )


def _rows(db: sqlite_utils.Database, sql: str, paths: list[str]) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    for at in range(0, len(paths), _IN):
        some = paths[at : at + _IN]
        out.update((r[0], r) for r in db.execute(sql.format(", ".join("?" * len(some))), some))
    return out


def _stat(path: str) -> Stat | None:
    try:
        return Stat.of(path)
    except OSError:
        return None


def _plan(
    db: sqlite_utils.Database, found: FoundLogs, full: bool, stats: IndexStats, dirty_folders: set[str]
) -> tuple[int, Iterator[GroupTask]]:
    """How many folders changed, and their tasks, each made when it is asked for (a run holds the
    tasks in flight, not one per folder of the fleet); unchanged folders cost a stat per file.

    The count comes first (it is the progress bar's total): a pass over the folders counts and
    keeps only the names of the changed ones; their tasks are made again, files stated again, as
    the run reaches them.  The folders come from ``found`` in the order their first log was found,
    their stored rows a folder at a time."""
    caps_by_dir: dict[str, list[str]] = {}
    for cap_path, folder in db.execute("SELECT path, dir FROM captures"):
        caps_by_dir.setdefault(folder, []).append(cap_path)

    def task(folder: str, counts: IndexStats) -> GroupTask | None:
        return _folder_task(db, folder, found.in_folder(folder), caps_by_dir, full, dirty_folders, counts)

    changed = [folder for folder in found.folders() if task(folder, stats) is not None]

    def tasks() -> Iterator[GroupTask]:
        for folder in changed:
            again = IndexStats()  # counted in the first pass; a file that vanished since is still said
            made = task(folder, again)
            stats.problems.extend(again.problems)
            if made is not None:
                yield made

    return len(changed), tasks()


def _folder_task(
    db: sqlite_utils.Database,
    folder: str,
    srcs: list[LogSource],
    caps_by_dir: dict[str, list[str]],
    full: bool,
    dirty_folders: set[str],
    stats: IndexStats,
) -> GroupTask | None:
    """The task of one folder, or None when nothing in it changed (``stats`` counts what it saw)."""
    prev_logs = _previous_logs(db, [src.display for src in srcs])
    logs: list[LogTask] = []
    for src in srcs:
        path = src.display
        try:
            st = source_stat(src)
        except OSError:
            st = None
        if st is None:
            stats.problems.append(f"{path}: vanished while indexing")
            continue
        row = prev_logs.get(path)
        prev = None
        changed = True
        if row is not None:
            prev = Previous(
                Stat(row[2], row[3], row[4], row[5]),
                lines=row[6] or 0,
                steps=row[7] or 0,
                versions=row[8] or 0,
                head_hash=row[9],
                tail_hash=row[10],
                turns=row[11] or 0,
                compactions=row[12] or 0,
            )
            changed = full or prev.stat != st
        logs.append(LogTask(src, st, prev, changed))
        if not changed:
            stats.unchanged += 1
    cap_paths: list[str] = []
    names = FolderNames()
    for src in srcs:
        cap = capture_of(src, names)
        if cap is not None and str(cap) not in cap_paths:
            cap_paths.append(str(cap))
    prev_caps = _previous_captures(db, cap_paths)
    captures: list[CaptureTask] = []
    for cp in cap_paths:
        cap_st = _stat(cp)
        if cap_st is None:
            continue
        cap_row = prev_caps.get(cp)
        cap_prev = None
        if cap_row is not None:
            cap_prev = Previous(
                Stat(cap_row[2], cap_row[3], cap_row[4], cap_row[5]),
                head_hash=cap_row[6],
                tail_hash=cap_row[7],
                checked_lines=cap_row[8] or 0,
            )
        captures.append(CaptureTask(cp, cap_st, cap_prev, full or cap_prev is None or cap_prev.stat != cap_st))
    gone_caps = [p for p in caps_by_dir.get(folder, []) if p not in cap_paths]
    recheck_all = folder in dirty_folders or bool(gone_caps)
    stats.sessions += len(logs)
    stats.captures += len(captures)
    if not recheck_all and not any(lt.changed for lt in logs) and not any(ct.changed for ct in captures):
        return None
    return GroupTask(folder, logs, captures, recheck_all, gone_caps)


def _attach_state(db: sqlite_utils.Database, task: GroupTask) -> None:
    """Load checkpoints and counters a worker needs (only for folders that changed)."""
    need_context = bool(task.captures)
    for lt in task.logs:
        prev = lt.previous
        if prev is None or (not lt.changed and not need_context):
            continue
        sid = db.execute("SELECT id FROM sessions WHERE path = ?", [lt.path]).fetchone()[0]
        ck = db.execute("SELECT data, bytes_at FROM checkpoints WHERE session_id = ?", [sid]).fetchone()
        if ck is not None:
            prev.checkpoint, prev.bytes_at = ck[0], ck[1]
        if lt.changed:
            prev.open_steps = tuple(
                r[0]
                for r in db.execute(
                    "SELECT idx FROM steps WHERE session_id = ? AND end_seq IS NULL ORDER BY idx", [sid]
                )
            )
            row = db.execute("SELECT max(seq) FROM messages WHERE session_id = ?", [sid]).fetchone()
            prev.last_message_seq = row[0] if row and row[0] is not None else -1
            prev.carry = [
                tuple(r)
                for r in db.execute(
                    "SELECT rule, category, severity, seq, line, turn, step, path, file, message, detail FROM findings "
                    f"WHERE session_id = ? AND source = 'log' AND rule IN ({', '.join('?' * len(_CARRIED))})",
                    [sid, *_CARRIED],
                )
            ]
    for ct in task.captures:
        if ct.previous is None:
            continue
        cid = db.execute("SELECT id FROM captures WHERE path = ?", [ct.path]).fetchone()[0]
        ct.previous.unexplained_lines = tuple(
            r[0]
            for r in db.execute(
                "SELECT line FROM requests WHERE capture_id = ? AND step_idx IS NULL "
                "AND status IN ('unexplained', 'not-routed')",
                [cid],
            )
        )
