"""``inspector index --export parquet DIR``: the findings, steps and requests tables as Parquet files.

For engines that read Parquet (DuckDB, Spark, pandas...) and not SQLite.
Each table becomes ``DIR/<table>.parquet`` with the SQLite columns in their
order; a column's type comes from its declared SQLite type (INTEGER ->
int64, REAL -> float64, BLOB -> binary, anything else -> string), NULLs
stay nulls.  Rows are streamed in batches, so a large index is never held
in memory.  pyarrow is imported only here (the fleet extra).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from inspector.index.read import open_readonly

EXPORTED_TABLES = ("findings", "steps", "requests")
_BATCH = 50_000


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
            schema = pa.schema([(name, _arrow_type(pa, decl)) for name, decl in _columns(conn, table)])
            target = out / f"{table}.parquet"
            rows = 0
            cur = conn.execute(f"SELECT * FROM {table} ORDER BY rowid")
            try:
                with pq.ParquetWriter(target, schema) as writer:
                    while batch := cur.fetchmany(_BATCH):
                        writer.write_table(_arrow_batch(pa, table, schema, batch))
                        rows += len(batch)
                    if not rows:
                        writer.write_table(schema.empty_table())
            except OSError as exc:
                raise ExportError(f"{target}: cannot write the export ({exc.strerror or exc})") from exc
            counts[table] = rows
    finally:
        conn.close()
    return counts


def _arrow_batch(pa, table: str, schema, batch: list[tuple]):
    arrays = []
    for field, values in zip(schema, zip(*batch)):
        try:
            arrays.append(pa.array(values, type=field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # SQLite keeps any value in any column
            raise ExportError(f"{table}.{field.name}: a value does not fit the column's type ({exc})") from exc
    return pa.Table.from_arrays(arrays, schema=schema)


def _columns(conn: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    return [(row[1], (row[2] or "").upper()) for row in conn.execute(f"PRAGMA table_info({table})")]


def _arrow_type(pa, declared: str):
    if "INT" in declared:
        return pa.int64()
    if any(t in declared for t in ("REAL", "FLOA", "DOUB")):
        return pa.float64()
    if "BLOB" in declared:
        return pa.binary()
    return pa.string()
