"""Fork-seed checks over the stored sessions, in transactions of their own after the folders are written."""

from __future__ import annotations

import os
import sqlite3
from typing import Any

import sqlite_utils

from invariants.analysis.forks import ForkSide, check_fork_sides
from invariants.gate.fork_checks import Listed, resolve_parent
from invariants.gate.policy import FindingPolicy
from invariants.model.findings import Finding
from invariants.model.registry import make_finding
from invariants.read.source import LogSource, log_path

from . import rows as R
from .plan import _stat, _within
from .stats import IndexStats
from .work import judged
from .writer import _FINDING_INSERT, update_counts

# -- forks ---------------------------------------------------------------------


_PAGE = 200  # children resolved, checked and written per transaction
_CHILDREN = (
    "SELECT id, uid, path, root, parent_session, seed_length, events, era, revision, fork_checked, file, member "
    "FROM sessions WHERE parent_session IS NOT NULL AND id > ? ORDER BY id LIMIT ?"
)


def _fork_phase(db: sqlite_utils.Database, roots: list[str], stats: IndexStats, policy: FindingPolicy) -> None:
    """Fork-seed checks for children whose log, parent or parent's log changed.

    The parent is chosen as ``inspector check`` chooses it (:func:`_resolve_parent`),
    by the id in the child's session header: a ``parentSession`` value never
    becomes a path.  Children are read a page at a time (by id), so what is held
    is a page, not the index's children.
    """
    from invariants.analysis.forks import root_index_scope

    conn = db.conn
    last = -1
    with root_index_scope():  # each root scanned once for all the children
        while page := conn.execute(_CHILDREN, [last, _PAGE]).fetchall():
            last = page[-1][0]
            _check_page(conn, page, roots, stats, policy)


def _check_page(
    conn: sqlite3.Connection, page: list, roots: list[str], stats: IndexStats, policy: FindingPolicy
) -> None:
    """One page of children: each parent resolved, then the changed ones checked and written in one transaction."""
    todo = []
    for sid, uid, path, root, parent_uid, seed, events, era, rev, checked, file, member in page:
        if not any(_within(path, r) for r in roots):
            continue
        parent = _resolve_parent(conn, sid, file, member, root, parent_uid, seed or 0)
        key = f"{rev}|{root}|" + (f"{parent[0]}:{parent[3]}:{parent[7]}" if parent else "-")
        if key == checked:
            continue
        todo.append((sid, uid, path, root, parent_uid, seed, events, era, parent, key, file, member))
    if not todo:
        return
    conn.execute("BEGIN IMMEDIATE")
    done = []
    for sid, uid, path, root, parent_uid, seed, events, era, parent, key, file, member in todo:
        emitted: list[Finding] = []

        def emit(code: str, message: str, **where: Any) -> None:
            emitted.append(make_finding(code, message, **where))  # noqa: B023 (used within this pass)

        child = ForkSide(_source(file, root, member), uid, events, era, parent_uid, seed or 0)
        side = None
        if parent is not None:
            # A parent found by name (not the one checked log beside the child) is read
            # only as far as the seed, as `inspector check` does: its length is not taken.
            events = parent[2] if parent[7] == "checked" else None
            side = ForkSide(_source(parent[5], root, parent[6]), parent_uid, events, parent[4] or "seed")
        try:
            check_fork_sides(child, side, emit)
        except OSError as exc:
            stats.problems.append(f"{path}: fork check could not read a log ({exc.strerror or exc})")
            continue
        conn.execute("DELETE FROM findings WHERE session_id = ? AND source = 'fork'", [sid])
        conn.executemany(
            _FINDING_INSERT, [(sid, None, None, "fork", *R.finding_row(f)) for f in judged(policy, emitted)]
        )
        conn.execute(
            "UPDATE sessions SET parent_id = ?, fork_checked = ? WHERE id = ?",
            [parent[0] if parent else None, key, sid],
        )
        done.append(sid)
    update_counts(conn, done)
    conn.execute("COMMIT")
    stats.fork_checks += len(done)


def _source(file: str, root: str, member: str | None) -> LogSource:
    return LogSource(log_path(file), log_path(root), member)


class _Indexed:
    """An indexed session as :func:`~invariants.gate.fork_checks.resolve_parent` sees a checked log."""

    def __init__(self, row: tuple) -> None:
        self.row = row  # (id, path, events, revision, era, file, member, version, created_at)
        self.path = str(log_path(row[5]))
        self.created_at = row[8]


def _resolve_parent(
    conn: sqlite3.Connection, sid: int, file: str, member: str | None, root: str, parent_uid: str, seed: int
) -> tuple | None:
    """(id, path, events, revision, era, file, member, how) of the parent, or None.

    The choice ``inspector check`` makes (:func:`~invariants.gate.fork_checks.resolve_parent`),
    with the sessions indexed under the child's root as the checked logs: ``how``
    is ``checked`` for one of them, ``found`` for the log the store would have
    written (read only as far as its header; its id is None when it is not indexed).
    The id never becomes a path: the places are those the store would use under
    ``root``, and nothing outside ``root`` is indexed under it.
    """
    prefix = root.rstrip(os.sep) + os.sep
    rows = conn.execute(
        "SELECT id, path, events, revision, era, file, member, version, created_at FROM sessions "
        "WHERE uid = ? AND id != ? AND substr(path, 1, ?) = ? ORDER BY id",
        [parent_uid, sid, len(prefix), prefix],
    ).fetchall()
    created = conn.execute("SELECT created_at FROM sessions WHERE id = ?", [sid]).fetchone()
    child = _source(file, root, member)
    parent = resolve_parent(
        child, parent_uid, created[0] if created else None, seed, Listed([_Indexed(r) for r in rows])
    )
    if parent is None:
        return None
    if isinstance(parent, _Indexed):
        return (*parent.row[:7], "checked")
    indexed = next((r for r in rows if r[5] == str(parent.path) and r[6] is None), None)
    if indexed is not None:
        return (*indexed[:7], "found")
    st = _stat(str(parent.path))
    return (None, str(parent.path), None, st.revision if st else None, None, str(parent.path), None, "found")
