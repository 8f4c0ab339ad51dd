"""A cache of per-folder check results, so an unchanged corpus re-checks fast.

An entry is keyed by everything its result depends on:

* each log's and capture's revision: absolute path, size, ``mtime_ns``, inode;
* the names of the files in the folder (a capture line is only reported
  as unexplained when no log for its session sits beside it);
* the tool: its version plus the size and ``mtime_ns`` of every module of
  the ``invariants`` package (so an edited checker never serves stale
  results);
* the options that change results: forced profile, line limit, explicit
  capture files (with their revisions).

Selection, ignores, severity overrides, baselines and formats are applied
after the cache, so changing them never needs a re-parse.  A hit reads one
JSON pack per set of input paths and parses no log.  Entries are JSON
(never pickle: the cache directory is just a folder in the working tree)
written atomically; an unreadable or mismatching entry is a miss.  The directory
gets a ``CACHEDIR.TAG`` and a ``.gitignore`` of ``*``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson

from invariants.model.atomic import write_atomic
from invariants.read.source import UrlPath, is_url

DEFAULT_CACHE_DIR = ".inspector_cache"
_FORMAT = 1

_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This directory is a cache of inspector check results.\n"


def _sha256(data: bytes) -> str:
    import hashlib  # deferred: a run with --no-cache hashes nothing

    return hashlib.sha256(data).hexdigest()


def revision(path: str | os.PathLike | UrlPath) -> list | None:
    """``[absolute path, size, mtime_ns, inode]``, or None when it cannot be stat'ed.

    For a URL: ``[url, size, mtime_ns, digest of the ETag]`` from one ``info`` call.
    """
    if isinstance(path, UrlPath) or is_url(path):
        url = path if isinstance(path, UrlPath) else UrlPath.of(str(path))
        try:
            ust = url.stat()
        except OSError:
            return None
        if not ust.st_mtime_ns and not ust.st_ino:  # the backend says neither when nor which version: never cached
            return None
        return [url.url, ust.st_size, ust.st_mtime_ns, ust.st_ino]
    try:
        p = os.fspath(path)
        st = os.stat(p)
        return [os.path.abspath(p), st.st_size, st.st_mtime_ns, st.st_ino]
    except OSError:
        return None


_TOOL_KEY: str | None = None


def tool_key() -> str:
    """The tool's version plus a fingerprint of the library's source files."""
    global _TOOL_KEY
    if _TOOL_KEY is None:
        from invariants.model.version import __version__

        root = Path(__file__).resolve().parent
        parts: list[Any] = [__version__, _FORMAT]
        for p in sorted(root.rglob("*.py")):
            try:
                st = p.stat()
            except OSError:
                continue
            parts.append([p.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns])
        _TOOL_KEY = _sha256(json.dumps(parts).encode())[:20]
    return _TOOL_KEY


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=True).encode()


class ResultCache:
    """Entries of one *scope* (the set of paths a command names) live in one
    pack file, read once and written once per run: a hit costs one read, a
    cold run one write, whatever the number of folders.  A run keeps the
    entries it used and drops the rest, so a pack never outgrows its corpus.
    """

    def __init__(self, directory: str | os.PathLike = DEFAULT_CACHE_DIR) -> None:
        self.root = Path(directory)
        self.dir = self.root / tool_key()
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self._scope: str = "default"
        self._old: dict[str, Any] | None = None
        self._new: dict[str, Any] = {}
        self._dirty = False

    def open_scope(self, scope: Any) -> None:
        """Select the pack for ``scope`` (any JSON value, e.g. the resolved input paths)."""
        self._scope = _sha256(_dumps(scope))[:32]
        self._old, self._new, self._dirty = None, {}, False

    def _pack(self) -> Path:
        return self.dir / f"pack-{self._scope}.json"

    def _load(self) -> dict[str, Any]:
        if self._old is None:
            try:
                data = orjson.loads(self._pack().read_bytes())
                self._old = data if isinstance(data, dict) else {}
            except (OSError, orjson.JSONDecodeError):
                self._old = {}
        return self._old

    @staticmethod
    def _slot(kind: str, identity: Any) -> str:
        return kind + ":" + _sha256(_dumps(identity))[:32]

    def get(self, kind: str, identity: Any, key: Any) -> Any | None:
        slot = self._slot(kind, identity)
        entry = self._load().get(slot)
        if not isinstance(entry, dict) or entry.get("key") != orjson.loads(_dumps(key)):
            self.misses += 1
            return None
        self.hits += 1
        self._new[slot] = entry
        return entry.get("value")

    def put(self, kind: str, identity: Any, key: Any, value: Any) -> None:
        self._new[self._slot(kind, identity)] = {"key": key, "value": value}
        self._dirty = True

    def flush(self) -> None:
        """Write the pack if anything changed (atomically; errors cost speed, never correctness)."""
        old = self._old or {}
        if not self._dirty and set(self._new) == set(old):
            return
        try:
            self._prepare()
            path = self._pack()
            write_atomic(path, _dumps(self._new))
            self.writes += 1
            self._old, self._dirty = dict(self._new), False
        except OSError:
            pass

    def unwritable(self) -> str | None:
        """Why this cache cannot be written (creating its folder now), or None.  A run asks first:
        a cache the user cannot write is a usage error, not a silent slowdown."""
        try:
            self._prepare()
        except OSError as exc:
            return (
                f"{self.root}: cannot write the result cache ({exc.strerror or exc}); use --no-cache or --cache-dir DIR"
            )
        return None

    def _prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tag = self.root / "CACHEDIR.TAG"
        if not tag.exists():
            write_atomic(tag, _TAG)
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            write_atomic(ignore, "# Created by inspector check; safe to delete.\n*\n")
