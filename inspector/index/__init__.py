"""The postmortem index: one SQLite file (built with sqlite-utils) over a sessions root.

Write side: :func:`build_index` (``inspector index``).  Read side, for the CLI
and the TUI, never taking a write lock: :func:`list_sessions`,
:func:`run_query`, :func:`open_readonly`, :func:`covers`, :func:`index_info`.
See ``inspector/index/README.md`` for the schema, the views and how updates stay
incremental.
"""

from __future__ import annotations

from .build import DEFAULT_DB, IndexBuildError, IndexStats, build_index
from .read import QueryError, covers, index_info, list_sessions, open_readonly, run_query

__all__ = [
    "DEFAULT_DB",
    "IndexBuildError",
    "IndexStats",
    "QueryError",
    "build_index",
    "covers",
    "index_info",
    "list_sessions",
    "open_readonly",
    "run_query",
]
