"""The harness's SQLite persistence backend, read as a sessions root.

Two schemas exist (LOG-FORMAT.md §1.4):

* seed era (``schema.ts`` @ d060c0dd4f, ``user_version`` 4, or 0 on a
  database that predates versioning): ``sessions(id, version, created_at,
  cwd, parent_session, seed_length)`` and ``events(session_id, seq, type,
  time, data TEXT, source_event_seqs TEXT, surface_op TEXT)``, one row per
  event, JSON text in every payload column;
* HEAD (``packages/session/session-persistence-sqlite`` @ 611615650f,
  ``user_version`` 17, ``application_id`` 0x44534850): the sessions table adds
  ``origin``, ``delegation_depth``, ``agent_preset``, ``incarnation`` and
  ``revision``; ``events.data`` is JSON text, or a zstd frame when the text
  was 4 KiB or more; ``source_event_seqs`` is a BLOB of varints (the first
  seq as is, then zigzag deltas); ``ignorable`` is NULL, 1 (the envelope's
  ``ignorable: true``) or 0, the marker of a packed chunk row whose ``type``
  is a chunk tag, ``seq``/``time`` its ``seq0``/``time0`` and ``data`` the
  row's data object (3..1,024 members, at most 1 MiB of JSON).

Each session becomes a :class:`LogSource` with ``member`` = its id.  Its rows
are turned back into the JSONL text the file backend would hold (header line
first, then one line per physical row), so the loader, the era sniffer and
every check read a database session exactly like a log file.  A row that
cannot be decoded (a bad zstd payload, a malformed varint blob, a packed row
with surface columns) becomes a :class:`RowProblem` at its position; the
loader then applies the harness's committed-prefix rule (``scanRows``): fatal
before the last ``turn/end``, a torn tail after it.

The database is opened read-only (``mode=ro``); we never write to it (a
store with a hot rollback journal is read from a private rolled-back copy:
:func:`connect`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator

import orjson
import zstandard

from invariants.model.jsonvalue import too_deep
from invariants.read.line_records import DEFAULT_MAX_LINE, RawLine, RowProblem
from invariants.read.source import SQLITE_SIDECARS, LogSource, journal_of, local_file
from invariants.read.sqlite_rollback import rolled_back, stamp

SEED_SCHEMA = 4
V15_SCHEMA = 15
HEAD_SCHEMA = 17
OWNER_SCHEMA = 18
READ_SCHEMAS = (0, SEED_SCHEMA, V15_SCHEMA, HEAD_SCHEMA, OWNER_SCHEMA)
"""The store versions read (``PRAGMA user_version``; 0: a seed-era store that predates versioning)."""
APPLICATION_ID = 0x44534850
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ROW_TAGS = ("text-chunks", "reasoning-chunks", "tool-call-chunks")
MIN_ROW_MEMBERS = 3
MAX_ROW_MEMBERS = 1024
MAX_ROW_DATA_BYTES = 1 << 20
_MAX_SAFE = 2**53 - 1

SEED_DDL = """
CREATE TABLE sessions (
  id             TEXT PRIMARY KEY,
  version        INTEGER NOT NULL,
  created_at     INTEGER NOT NULL,
  cwd            TEXT,
  parent_session TEXT,
  seed_length    INTEGER
) STRICT;
CREATE TABLE events (
  session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq               INTEGER NOT NULL,
  type              TEXT NOT NULL,
  time              INTEGER NOT NULL,
  data              TEXT NOT NULL,
  source_event_seqs TEXT,
  surface_op        TEXT,
  PRIMARY KEY (session_id, seq)
) STRICT;
"""

# packages/session/session-persistence-sqlite/resources/sql/schema.sql @ 611615650f
HEAD_DDL = """
CREATE TABLE persistence_state (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  store_id  TEXT NOT NULL
) STRICT;
CREATE TABLE sessions (
  id               TEXT PRIMARY KEY,
  version          INTEGER NOT NULL,
  created_at       INTEGER NOT NULL,
  cwd              TEXT,
  parent_session   TEXT,
  seed_length      INTEGER,
  origin           TEXT,
  delegation_depth INTEGER,
  agent_preset     TEXT,
  incarnation      TEXT NOT NULL,
  revision         INTEGER NOT NULL
) STRICT;
CREATE TABLE events (
  session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq               INTEGER NOT NULL,
  type              TEXT NOT NULL,
  time              INTEGER NOT NULL,
  data              ANY NOT NULL,
  source_event_seqs ANY,
  surface_op        TEXT,
  ignorable         INTEGER CHECK (ignorable IS NULL OR ignorable IN (0, 1)),
  PRIMARY KEY (session_id, seq)
) STRICT;
"""


# schema.ts @ 9186824e87 (2026-08-11, SCHEMA_VERSION 15): one row per event, JSON text in data,
# source_event_seqs (a JSON array) and surface_op; ignorable 1 or NULL (no packed rows yet)
V15_DDL = """
CREATE TABLE persistence_state (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  store_id  TEXT NOT NULL
) STRICT;
CREATE TABLE sessions (
  id               TEXT PRIMARY KEY,
  version          INTEGER NOT NULL,
  created_at       INTEGER NOT NULL,
  cwd              TEXT,
  parent_session   TEXT,
  seed_length      INTEGER,
  origin           TEXT,
  delegation_depth INTEGER,
  agent_preset    TEXT,
  incarnation      TEXT NOT NULL,
  revision         INTEGER NOT NULL
) STRICT;
CREATE TABLE events (
  session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq               INTEGER NOT NULL,
  type              TEXT NOT NULL,
  time              INTEGER NOT NULL,
  data              TEXT NOT NULL,
  source_event_seqs TEXT,
  surface_op        TEXT,
  ignorable         INTEGER,
  PRIMARY KEY (session_id, seq)
) STRICT
"""

# Schema 18 (forks): 17 with the session's owner; its rows are read as 17's.
OWNER_DDL = HEAD_DDL.replace(
    "  revision         INTEGER NOT NULL\n", "  revision         INTEGER NOT NULL,\n  owner            TEXT\n"
)


class NotASessionDatabase(Exception):
    """The file is not SQLite, or has no harness sessions/events tables."""


class ForeignDatabase(NotASessionDatabase):
    """A readable SQLite database without the harness's sessions/events tables (another tool's)."""


@dataclass(frozen=True, slots=True)
class DbInfo:
    user_version: int
    application_id: int
    schema: str  # "seed" | "v15" | "head" (17 and 18) | "unknown" (a version not read: user_version names it)
    session_columns: tuple[str, ...]
    event_columns: tuple[str, ...]
    immutable: bool  # opened with immutable=1 (no writer's files beside it, or a plain read-only open failed)


# A damaged file can fail any call: SQLite errors, and error messages quoting
# invalid UTF-8 (a garbled schema) that Python cannot even decode.
_DB_ERRORS = (sqlite3.Error, UnicodeDecodeError)


def _uri(path: Path, immutable: bool = False) -> str:
    uri = path.resolve().as_uri() + "?mode=ro"
    return uri + "&immutable=1" if immutable else uri


def _quiescent(path: Path) -> bool:
    """No writer is, or was cut off, mid-way: no ``-wal``, ``-shm`` or ``-journal`` beside the file."""
    return not any(path.with_name(path.name + s).exists() for s in SQLITE_SIDECARS)


def connect(path: Path) -> tuple[sqlite3.Connection, bool]:
    """A read-only connection that creates nothing beside the file.

    A database in WAL mode opened with ``mode=ro`` makes SQLite create its
    ``-wal`` and ``-shm`` files when they are absent (wherever the directory
    lets it), so a database that no writer holds is opened ``immutable=1``;
    one with a writer's files beside it needs ``mode=ro`` to see the WAL.
    The harness may also write in a rollback-journal mode (``journalMode``
    ``delete``, ``truncate`` or ``persist``): a write cut off there leaves a
    hot ``-journal`` that a read-only open cannot roll back, and the file read
    without it holds the uncommitted rows, so such a database is read from a
    private copy rolled back as the harness's next open would
    (:func:`~invariants.read.sqlite_rollback.rolled_back`).  ``immutable=1`` is the fallback when a plain
    read-only open fails otherwise.
    """
    if _quiescent(path):
        try:
            con = sqlite3.connect(_uri(path, immutable=True), uri=True)
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return con, True
        except _DB_ERRORS as exc:
            if "not a database" in str(exc) or "file is encrypted" in str(exc):
                raise NotASessionDatabase(f"{path}: not a SQLite database") from None
    try:
        con = sqlite3.connect(_uri(path), uri=True)
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return con, False
    except _DB_ERRORS as exc:
        if "not a database" in str(exc) or "file is encrypted" in str(exc):
            raise NotASessionDatabase(f"{path}: not a SQLite database") from None
        journal = journal_of(path)
        try:
            stamps = (stamp(path), stamp(journal)) if journal.is_file() else None
        except OSError:
            stamps = None  # (a journal that went away: its writer finished; read the file as it is)
        if stamps is not None and stamps[1][1]:
            try:
                copy = rolled_back(path.resolve(), stamps)
                con = sqlite3.connect(_uri(copy, immutable=True), uri=True)
                con.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return con, True
            except FileNotFoundError:
                pass  # (the journal went away while it was copied: as above)
            except (*_DB_ERRORS, OSError) as exc2:  # (a full disk): its committed rows cannot be told apart
                raise NotASessionDatabase(
                    f"{path}: a write to it was cut off, and its journal could not be rolled back on a private "
                    f"copy ({exc2})"
                ) from None
        try:
            con = sqlite3.connect(_uri(path, immutable=True), uri=True)
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return con, True
        except _DB_ERRORS as exc2:
            raise NotASessionDatabase(f"{path}: cannot open read-only ({exc2})") from None


def _columns(con: sqlite3.Connection, table: str) -> tuple[str, ...]:
    return tuple(r[1] for r in con.execute(f"PRAGMA table_info({table})"))


def _info(con: sqlite3.Connection, path: Path, immutable: bool) -> DbInfo:
    try:
        uv = con.execute("PRAGMA user_version").fetchone()[0]
        app = con.execute("PRAGMA application_id").fetchone()[0]
        scols, ecols = _columns(con, "sessions"), _columns(con, "events")
    except _DB_ERRORS as exc:
        raise NotASessionDatabase(f"{path}: not a readable SQLite database ({exc})") from None
    need_s = {"id", "version", "created_at"}
    need_e = {"session_id", "seq", "type", "time", "data", "source_event_seqs", "surface_op"}
    if not need_s <= set(scols) or not need_e <= set(ecols):
        raise ForeignDatabase(f"{path}: no harness sessions/events tables")
    schema = _schema(uv, "ignorable" in ecols)
    return DbInfo(uv, app, schema, scols, ecols, immutable)


def _schema(user_version: int, ignorable: bool) -> str:
    """Which rows the store holds, by the version it records (never guessed from a version not read)."""
    if user_version in (HEAD_SCHEMA, OWNER_SCHEMA):
        return "head"
    if user_version == V15_SCHEMA:
        return "v15"
    if user_version in (0, SEED_SCHEMA) and not ignorable:
        return "seed"
    if user_version == 0:  # unstamped, with the HEAD columns: read as HEAD (as before stores were versioned)
        return "head"
    return "unknown"


@lru_cache(maxsize=32)
def _cached_info(path: Path, mtime_ns: int, size: int) -> DbInfo:
    con, immutable = connect(path)
    try:
        return _info(con, path, immutable)
    finally:
        con.close()


def db_info(path: Path) -> DbInfo:
    st = path.stat()
    return _cached_info(path.resolve(), st.st_mtime_ns, st.st_size)


def schema_note(info: DbInfo) -> str | None:
    """A sentence when the database's stamps do not match its table shapes."""
    if info.schema == "head" and info.user_version != HEAD_SCHEMA:
        return f"schema with packed rows but user_version {info.user_version} (the harness writes {HEAD_SCHEMA})"
    if info.schema == "head" and info.application_id != APPLICATION_ID:
        return f"application_id {info.application_id:#x} (the harness writes {APPLICATION_ID:#x})"
    if info.schema == "seed" and info.user_version not in (0, SEED_SCHEMA):
        return f"seed-era tables but user_version {info.user_version} (the harness writes {SEED_SCHEMA})"
    return None


def list_sessions(path: Path, root: Path | None = None) -> list[LogSource]:
    """Every session stored in the database at ``path``, oldest first."""
    info = db_info(path)
    con, _ = connect(path)
    try:
        rows = con.execute("SELECT id FROM sessions ORDER BY created_at, id").fetchall()
    except _DB_ERRORS as exc:
        raise NotASessionDatabase(f"{path}: cannot list sessions ({exc})") from None
    finally:
        con.close()
    del info
    root = path.parent if root is None else root
    return [LogSource(path, root, member=str(r[0])) for r in rows]


def is_session_database(path: Path) -> bool:
    try:
        db_info(path)
        return True
    except (NotASessionDatabase, OSError):
        return False


def schema_era_evidence(source: LogSource, seen: dict[str, str]) -> None:
    try:
        info = db_info(local_file(source.path))
    except (NotASessionDatabase, OSError):
        return
    if info.schema == "head":
        seen.setdefault(f"sqlite schema {info.user_version} (packed rows)", "late")
    elif info.schema == "v15":
        seen.setdefault(f"sqlite schema {info.user_version} (JSON text rows)", "late")
    elif info.schema == "seed":
        seen.setdefault(f"sqlite schema {info.user_version} (seed tables)", "seed")


# -- row decoding ----------------------------------------------------------------


class RowError(ValueError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def decode_source_seqs(blob: bytes) -> list[int]:
    """HEAD's ``source_event_seqs`` BLOB: canonical LEB128 varints, the first a seq, the rest zigzag deltas."""
    values: list[int] = []
    prev = 0
    pos = 0
    n = len(blob)
    while pos < n:
        first = not values
        value = 0
        shift = 0
        while True:
            if pos >= n:
                raise RowError("LOG016", "source_event_seqs: truncated varint")
            byte = blob[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if shift and not byte & 0x7F:
                    raise RowError("LOG016", "source_event_seqs: non-canonical varint")
                break
            shift += 7
            if shift > 56:
                raise RowError("LOG016", "source_event_seqs: varint out of range")
        if value > (_MAX_SAFE if first else 2 * _MAX_SAFE):
            raise RowError("LOG016", "source_event_seqs: varint out of range")
        cur = value if first else prev + (value // 2 if value % 2 == 0 else -((value + 1) // 2))
        if not 0 <= cur <= _MAX_SAFE:
            raise RowError("LOG016", "source_event_seqs: decoded seq out of range")
        values.append(cur)
        prev = cur
    return values


def encode_source_seqs(values: list[int]) -> bytes:
    """The inverse of :func:`decode_source_seqs` (used to build test databases)."""
    out = bytearray()
    prev = 0
    for i, v in enumerate(values):
        x = v if i == 0 else ((v - prev) * 2 if v >= prev else (prev - v) * 2 - 1)
        while x >= 0x80:
            out.append((x & 0x7F) | 0x80)
            x >>= 7
        out.append(x)
        prev = v
    return bytes(out)


def encode_data(text: str, threshold: int = 4096) -> str | bytes:
    """HEAD's ``encodeData``: zstd (level 3) when the UTF-8 text is >= 4 KiB and compression helps."""
    raw = text.encode()
    if len(raw) < threshold:
        return text
    packed = zstandard.ZstdCompressor(level=3).compress(raw)
    return packed if len(packed) < len(raw) else text


def _data_text(value: object, limit: int | None) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, bytes):
        if not value.startswith(ZSTD_MAGIC):
            raise RowError("LOG016", "data is a BLOB that is not a zstd frame")
        try:
            dobj = zstandard.ZstdDecompressor().decompressobj()
            out = dobj.decompress(value)
        except zstandard.ZstdError as exc:
            raise RowError("LOG016", f"data blob does not decompress ({exc})") from None
        if not dobj.eof:
            raise RowError("LOG016", "data blob is a truncated zstd frame")
        if limit is not None and len(out) > limit:
            raise RowError("LOG012", f"packed row data exceeds {limit} bytes")
        try:
            out.decode("utf-8")
        except UnicodeDecodeError:
            raise RowError("LOG016", "data blob is not UTF-8") from None
        return out
    raise RowError("LOG016", f"data column holds a {type(value).__name__}, not text or a zstd blob")


def _dumps(value: object) -> bytes:
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):  # a BLOB where a type, seq or time should be
        raise RowError(
            "LOG016", f"a {type(value).__name__} column value where JSON text or a number was expected"
        ) from None


def _seed_row(row: tuple) -> bytes:
    seq, type_, time, data, sources, surface = row
    if not isinstance(data, str):
        raise RowError("LOG016", f"data column holds a {type(data).__name__}, not JSON text")
    parts = [
        b'{"type":',
        _dumps(type_),
        b',"seq":',
        _dumps(seq),
        b',"time":',
        _dumps(time),
        b',"data":',
        data.encode("utf-8", "surrogatepass"),
    ]
    if sources is not None:
        parts += [b',"sourceEventSeqs":', str(sources).encode()]
    if surface is not None:
        parts += [b',"surfaceOp":', str(surface).encode()]
    parts.append(b"}")
    return b"".join(parts)


def _v15_row(row: tuple) -> bytes:
    """A schema-15 row: the seed era's JSON text columns, and ``ignorable`` 1 (the envelope's marker) or NULL."""
    ignorable = row[6]
    if ignorable not in (None, 1):
        raise RowError("LOG016", f"ignorable column is {ignorable!r} (schema 15 writes NULL or 1)")
    line = _seed_row(row[:6])
    return line[:-1] + b',"ignorable":true}' if ignorable == 1 else line


def _head_row(row: tuple) -> bytes:
    seq, type_, time, data, sources, surface, ignorable = row
    if ignorable == 0:
        if type_ not in ROW_TAGS:
            raise RowError("LOG012", f"packed row (ignorable=0) of type {type_!r}: only chunk tags may be packed")
        if sources is not None or surface is not None:
            raise RowError("LOG012", f"packed {type_} row carries surface columns (they must be NULL)")
        text = _data_text(data, MAX_ROW_DATA_BYTES)
        if len(text) > MAX_ROW_DATA_BYTES:
            raise RowError("LOG012", f"packed {type_} row data exceeds {MAX_ROW_DATA_BYTES} bytes")
        try:
            if too_deep(text):  # before orjson: deep enough nesting crashes some releases of it
                raise ValueError
            members = orjson.loads(text)
        except ValueError:  # orjson.JSONDecodeError is one
            raise RowError("LOG012", f"packed {type_} row data is not JSON") from None
        key = "args" if type_ == "tool-call-chunks" else "texts"
        payload = members.get(key) if isinstance(members, dict) else None
        if isinstance(payload, list) and not MIN_ROW_MEMBERS <= len(payload) <= MAX_ROW_MEMBERS:
            raise RowError(
                "LOG012",
                f"packed {type_} row holds {len(payload)} members (the SQLite codec allows "
                f"{MIN_ROW_MEMBERS}..{MAX_ROW_MEMBERS})",
            )
        return b"".join(
            [b'{"type":', _dumps(type_), b',"seq0":', _dumps(seq), b',"time0":', _dumps(time), b',"data":', text, b"}"]
        )
    if ignorable not in (None, 1):
        raise RowError("LOG016", f"ignorable column is {ignorable!r} (must be NULL, 0 or 1)")
    parts = [
        b'{"type":',
        _dumps(type_),
        b',"seq":',
        _dumps(seq),
        b',"time":',
        _dumps(time),
        b',"data":',
        _data_text(data, None),
    ]
    if sources is not None:
        if not isinstance(sources, bytes):
            raise RowError("LOG016", f"source_event_seqs holds a {type(sources).__name__}, not a varint BLOB")
        parts += [b',"sourceEventSeqs":', _dumps(decode_source_seqs(sources))]
    if surface is not None:
        parts += [b',"surfaceOp":', str(surface).encode("utf-8", "surrogatepass")]
    if ignorable == 1:
        parts.append(b',"ignorable":true')
    parts.append(b"}")
    return b"".join(parts)


def header_line(row: sqlite3.Row | tuple, columns: tuple[str, ...]) -> dict:
    """The JSONL header line (``toHeaderLine`` order) for a sessions row."""
    r = dict(zip(columns, row))
    out: dict = {"type": "session", "version": r.get("version"), "id": r.get("id"), "createdAt": r.get("created_at")}
    for col, key in (
        ("cwd", "cwd"),
        ("parent_session", "parentSession"),
        ("seed_length", "seedLength"),
        ("origin", "origin"),
        ("delegation_depth", "delegationDepth"),
        ("agent_preset", "agentPreset"),
        ("owner", "owner"),  # schema 18 (forks)
    ):
        if r.get(col) is not None:
            out[key] = r[col]
    return out


def iter_member_lines(source: LogSource, max_line: int = DEFAULT_MAX_LINE) -> Iterator[RawLine | RowProblem]:
    """The session ``source.member`` as JSONL lines: the header, then one line per stored row.

    A database that stops being readable (a malformed page, a file changed
    under us) ends the stream with one LOG016 :class:`RowProblem` at the place
    it stopped, like a torn tail, instead of an exception.
    """
    position = [0]
    try:
        yield from _member_lines(source, max_line, position)
    except (*_DB_ERRORS, NotASessionDatabase, RowError) as exc:
        n = position[0] + 1
        yield RowProblem(n, None, "LOG016", f"row {n}: the database cannot be read from here on ({exc})", final=True)


def _member_lines(source: LogSource, max_line: int, position: list[int]) -> Iterator[RawLine | RowProblem]:
    path = local_file(source.path)
    info = db_info(path)
    con, _ = connect(path)
    try:
        cols = info.session_columns
        head = con.execute(f"SELECT {', '.join(cols)} FROM sessions WHERE id = ?", (source.member,)).fetchone()
        if head is None:
            return
        text = _dumps(header_line(head, cols))
        yield RawLine(1, 0, text, True)
        offset = len(text) + 1
        number = 1
        if info.schema == "unknown":
            yield RowProblem(
                2,
                None,
                "LOG016",
                f"the store records schema version {info.user_version}, which this checker does not read (it reads "
                f"{', '.join(map(str, READ_SCHEMAS[1:]))}): its rows are not read",
                final=True,
            )
            return
        if info.schema in ("head", "v15"):
            query = (
                "SELECT seq, type, time, data, source_event_seqs, surface_op, ignorable"
                " FROM events WHERE session_id = ? ORDER BY seq"
            )
            decode = _head_row if info.schema == "head" else _v15_row
        else:
            query = (
                "SELECT seq, type, time, data, source_event_seqs, surface_op"
                " FROM events WHERE session_id = ? ORDER BY seq"
            )
            decode = _seed_row
        position[0] = number
        for row in con.execute(query, (source.member,)):
            number += 1
            position[0] = number
            try:
                line = decode(row)
            except RowError as exc:
                yield RowProblem(
                    number, row[0] if isinstance(row[0], int) else None, exc.code, f"row seq {row[0]}: {exc}"
                )
                continue
            if len(line) > max_line:
                yield RawLine(number, offset, b"", True, oversized=len(line))
            else:
                yield RawLine(number, offset, line, True)
            offset += len(line) + 1
    finally:
        con.close()


# -- writing (tests and sample logs only) --------------------------------------------


def write_database(
    path: Path,
    sessions: list[tuple[dict, list[dict]]],
    schema: str = "head",
    pack: bool = True,
    uuids: Callable[[], str] | None = None,
) -> None:
    """Build a database the way the harness's backend lays it out.

    ``sessions`` holds (header line, events) pairs.  HEAD schema: chunk runs
    packed into rows (split at 1,024 members), ``data`` zstd-compressed from
    4 KiB, ``source_event_seqs`` as varint BLOBs.  Seed schema: one JSON row
    per event.  Never used on a user's file: the checker only reads.
    """
    import json
    import uuid

    from invariants.read.chunk_rows import pack_events

    new_uuid = uuids or (lambda: str(uuid.uuid4()))
    con = sqlite3.connect(path)
    try:
        con.executescript(HEAD_DDL if schema == "head" else SEED_DDL)
        if schema == "head":
            con.execute("INSERT INTO persistence_state (singleton, store_id) VALUES (1, ?)", (new_uuid(),))
            con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            con.execute(f"PRAGMA user_version = {HEAD_SCHEMA}")
        else:
            con.execute(f"PRAGMA user_version = {SEED_SCHEMA}")
        for header, events in sessions:

            def js(v: object) -> str:
                return json.dumps(v, ensure_ascii=False, separators=(",", ":"))

            if schema == "head":
                con.execute(
                    "INSERT INTO sessions (id, version, created_at, cwd, parent_session, seed_length, origin, "
                    "delegation_depth, agent_preset, incarnation, revision)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
                    (
                        header["id"],
                        header["version"],
                        header["createdAt"],
                        header.get("cwd"),
                        header.get("parentSession"),
                        header.get("seedLength"),
                        header.get("origin"),
                        header.get("delegationDepth"),
                        header.get("agentPreset"),
                        new_uuid(),
                    ),
                )
                records = pack_events(events) if pack else events
                for rec in records:
                    if "seq0" in rec:
                        members = rec["data"].get("args") or rec["data"].get("texts")
                        for part in _split_row(rec, len(members)):
                            con.execute(
                                "INSERT INTO events VALUES (?, ?, ?, ?, ?, NULL, NULL, 0)",
                                (
                                    header["id"],
                                    part["seq0"],
                                    part["type"],
                                    part["time0"],
                                    encode_data(js(part["data"])),
                                ),
                            )
                        continue
                    con.execute(
                        "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            header["id"],
                            rec["seq"],
                            rec["type"],
                            rec["time"],
                            encode_data(js(rec["data"])),
                            encode_source_seqs(rec["sourceEventSeqs"]) if "sourceEventSeqs" in rec else None,
                            js(rec["surfaceOp"]) if "surfaceOp" in rec else None,
                            1 if rec.get("ignorable") is True else None,
                        ),
                    )
            else:
                con.execute(
                    "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        header["id"],
                        header["version"],
                        header["createdAt"],
                        header.get("cwd"),
                        header.get("parentSession"),
                        header.get("seedLength"),
                    ),
                )
                for ev in events:
                    con.execute(
                        "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (
                            header["id"],
                            ev["seq"],
                            ev["type"],
                            ev["time"],
                            js(ev["data"]),
                            js(ev["sourceEventSeqs"]) if "sourceEventSeqs" in ev else None,
                            js(ev["surfaceOp"]) if "surfaceOp" in ev else None,
                        ),
                    )
        con.commit()
    finally:
        con.close()


def _split_row(row: dict, members: int) -> list[dict]:
    """Split a packed row at MAX_ROW_MEMBERS (the SQLite codec's cap).

    A remainder under 3 members stays packed with its predecessor's share.
    """
    if members <= MAX_ROW_MEMBERS:
        return [row]
    data = row["data"]
    key = "args" if "args" in data else "texts"
    out = []
    start = 0
    time = row["time0"]
    while start < members:
        end = min(start + MAX_ROW_MEMBERS, members)
        if members - end and members - end < MIN_ROW_MEMBERS:
            end = members - MIN_ROW_MEMBERS
        part = {
            "turn": data["turn"],
            "step": data["step"],
            "index": data["index"],
            "dt": data["dt"][start : end - 1],
            **{k: data[k] for k in ("id", "name") if k in data},
            key: data[key][start:end],
        }
        out.append({"type": row["type"], "seq0": row["seq0"] + start, "time0": time, "data": part})
        time += sum(data["dt"][start:end])
        start = end
    return out
