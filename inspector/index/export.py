"""``inspector index --export parquet DIR``: the sessions, findings, steps and requests tables as typed Parquet.

For engines that read Parquet (DuckDB, Spark, pandas...) and not SQLite.
Each table becomes ``DIR/<table>.parquet`` with the SQLite columns in their
order.  SQLite keeps booleans and times as integers and structured values
as JSON text; Parquet has types for them, so the columns in :data:`TYPED`
are written as what they are:

* ``bool``: 0/1 flags (``sessions.torn``, ``requests.loop_built``...);
* ``timestamp``: epoch milliseconds (``sessions.created_at``,
  ``requests.time``) and ISO text (``sessions.indexed_at``), all UTC
  (``sessions.mtime_ns`` stays the exact int64 the change detection keys on);
* ``json``: JSON text decoded into Parquet lists and structs
  (``steps.usage`` a struct of token counts, ``requests.codes`` a list of
  rule codes, ``requests.extra`` and ``findings.detail`` structs).  A JSON
  column's type is inferred from every value in it (a first pass): objects
  are structs with the union of their keys, arrays lists, numbers int64 or
  float64; a part whose values disagree in kind (a detail's ``expected`` is
  a string in one finding and a number in another) stays JSON text there.

Any other column's type comes from its declared SQLite type (INTEGER ->
int64, REAL -> float64, BLOB -> binary, anything else -> string); NULLs stay
nulls.  ``steps.session_id`` (and the other ``session_id`` columns) join
``sessions.id``, whose row holds the log's path.  Rows are streamed in
batches, so a large index is never held in memory (a JSON column's first
pass holds only its inferred shape).  pyarrow is imported only here (the
fleet extra).
"""

from __future__ import annotations

import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from inspector.index.read import open_readonly
from invariants.model.atomic import atomic_file, write_error

EXPORTED_TABLES = ("sessions", "findings", "steps", "requests")
_BATCH = 50_000

# (table, column) -> how the SQLite value is typed in Parquet
TYPED: dict[tuple[str, str], str] = {
    ("sessions", "created_at"): "epoch-ms",
    ("sessions", "indexed_at"): "iso",
    ("sessions", "compressed"): "bool",
    ("sessions", "torn"): "bool",
    ("sessions", "open_turn_at_end"): "bool",
    ("sessions", "resumable"): "bool",
    ("steps", "compaction_before"): "bool",
    ("steps", "usage"): "json",
    ("requests", "loop_built"): "bool",
    ("requests", "time"): "epoch-ms",
    ("requests", "codes"): "json",
    ("requests", "extra"): "json",
    ("findings", "detail"): "json",
}


class ExportError(Exception):
    """An export that cannot be made (pyarrow missing, an unwritable folder)."""


def export_parquet(db_path: str | os.PathLike, out_dir: str | os.PathLike) -> dict[str, int]:
    """Write each of :data:`EXPORTED_TABLES` to ``out_dir``; returns rows written per table."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ExportError(f"--export parquet needs pyarrow (pip install 'dsh-inspector[fleet]'): {exc}") from exc
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"{out}: cannot write the export ({exc.strerror or exc})") from exc
    conn = open_readonly(db_path)
    counts: dict[str, int] = {}
    try:
        for table in EXPORTED_TABLES:
            columns = _columns(conn, table)
            kinds = [TYPED.get((table, name)) for name, _ in columns]
            shapes = [
                _json_shape(conn, table, name) if kind == "json" else None for (name, _), kind in zip(columns, kinds)
            ]
            fields = [
                (name, _arrow_type(pa, decl, kind, shape)) for (name, decl), kind, shape in zip(columns, kinds, shapes)
            ]
            schema = pa.schema(fields)
            target = out / f"{table}.parquet"
            rows = 0
            cur = conn.execute(f"SELECT * FROM {table} ORDER BY rowid")
            try:  # each file whole or not at all: a temporary file beside it, renamed into place
                with atomic_file(target, "wb") as fh, pq.ParquetWriter(fh, schema) as writer:
                    while batch := cur.fetchmany(_BATCH):
                        writer.write_table(_arrow_batch(pa, table, schema, kinds, shapes, batch))
                        rows += len(batch)
                    if not rows:
                        writer.write_table(schema.empty_table())
            except OSError as exc:
                raise ExportError(write_error(target, "the export", exc)) from exc
            counts[table] = rows
    finally:
        conn.close()
    return counts


def _arrow_batch(pa, table: str, schema, kinds: list, shapes: list, batch: list[tuple]):
    arrays = []
    for field, kind, shape, values in zip(schema, kinds, shapes, zip(*batch)):
        try:
            arrays.append(pa.array(_values(kind, shape, values), type=field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:  # SQLite keeps any value anywhere
            raise ExportError(f"{table}.{field.name}: a value does not fit the column's type ({exc})") from exc
    return pa.Table.from_arrays(arrays, schema=schema)


def _values(kind: str | None, shape: Any, values: tuple) -> list | tuple:
    if kind is None:
        return values
    if kind == "bool":
        return [None if v is None else bool(v) for v in values]
    if kind == "epoch-ms":
        return [None if v is None else int(v) for v in values]
    if kind == "iso":
        return [None if v is None else datetime.fromisoformat(v).astimezone(timezone.utc) for v in values]
    decoded = ((v, _loads(v)) for v in values)
    return [None if v is None else v if x is _UNREADABLE else _shaped(x, shape) for v, x in decoded]


def _columns(conn: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    return [(row[1], (row[2] or "").upper()) for row in conn.execute(f"PRAGMA table_info({table})")]


def _arrow_type(pa, declared: str, kind: str | None = None, shape: Any = None):
    if kind == "bool":
        return pa.bool_()
    if kind == "epoch-ms":
        return pa.timestamp("ms", tz="UTC")
    if kind == "iso":
        return pa.timestamp("us", tz="UTC")
    if kind == "json":
        return _shape_type(pa, shape)
    if "INT" in declared:
        return pa.int64()
    if any(t in declared for t in ("REAL", "FLOA", "DOUB")):
        return pa.float64()
    if "BLOB" in declared:
        return pa.binary()
    return pa.string()


# -- JSON columns: a shape inferred from every value, then each value fitted to it -------------------
# A shape is ("null",), ("bool",), ("int",), ("float",), ("str",), ("json",) (kept as JSON text),
# ("list", element shape) or ("struct", {key: shape}).
_NULL, _JSON = ("null",), ("json",)
_UNREADABLE = object()


def _loads(text: Any) -> Any:
    try:
        return orjson.loads(text)
    except (orjson.JSONDecodeError, TypeError):
        return _UNREADABLE


def _json_shape(conn: sqlite3.Connection, table: str, column: str) -> tuple:
    shape: tuple = _NULL
    cur = conn.execute(f'SELECT "{column}" FROM {table} WHERE "{column}" IS NOT NULL')
    while batch := cur.fetchmany(_BATCH):
        for (text,) in batch:
            shape = _merge(shape, _shape_of(_loads(text)))
    return shape


def _shape_of(value: Any) -> tuple:
    if value is None:
        return _NULL
    if value is _UNREADABLE:
        return _JSON
    if isinstance(value, bool):
        return ("bool",)
    if isinstance(value, int):
        return ("int",) if -(2**63) <= value < 2**63 else ("float",)
    if isinstance(value, float):
        return ("float",)
    if isinstance(value, str):
        return ("str",)
    if isinstance(value, list):
        element: tuple = _NULL
        for v in value:
            element = _merge(element, _shape_of(v))
        return ("list", element)
    if isinstance(value, dict):
        return ("struct", {k: _shape_of(v) for k, v in value.items()})
    return _JSON


def _merge(a: tuple, b: tuple) -> tuple:
    if a == _NULL:
        return b
    if b == _NULL or a == b and a[0] not in ("list", "struct"):
        return a
    kinds = {a[0], b[0]}
    if kinds == {"int", "float"}:
        return ("float",)
    if a[0] != b[0] or _JSON in (a, b):
        return _JSON
    if a[0] == "list":
        return ("list", _merge(a[1], b[1]))
    keys = {**a[1], **b[1]}
    return ("struct", {k: _merge(a[1].get(k, _NULL), b[1].get(k, _NULL)) for k in keys})


def _shape_type(pa, shape: tuple):
    kind = shape[0]
    if kind == "bool":
        return pa.bool_()
    if kind == "int":
        return pa.int64()
    if kind == "float":
        return pa.float64()
    if kind == "list":
        return pa.list_(_shape_type(pa, shape[1]))
    if kind == "struct" and shape[1]:  # Parquet has no struct without fields: {} stays JSON text
        return pa.struct([(k, _shape_type(pa, s)) for k, s in shape[1].items()])
    return pa.string()  # str, json, and a part that was always null


def _shaped(value: Any, shape: tuple) -> Any:
    """``value`` as pyarrow takes it for ``shape``'s type (JSON text where the shape is json)."""
    if value is None:
        return None
    kind = shape[0]
    if kind == "list" and isinstance(value, list):
        return [_shaped(v, shape[1]) for v in value]
    if kind == "struct" and shape[1] and isinstance(value, dict):
        return {k: _shaped(value.get(k), s) for k, s in shape[1].items()}
    if kind in ("json", "null", "struct"):  # JSON text (struct: only {} was seen)
        return orjson.dumps(value).decode()
    if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value
