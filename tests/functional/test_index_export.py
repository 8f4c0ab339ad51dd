"""``inspector index --export parquet DIR``: the sessions, findings, steps and requests tables, typed, read back."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow", reason="the fleet extra (pyarrow) is not installed")
pq = pytest.importorskip("pyarrow.parquet", reason="the fleet extra (pyarrow) is not installed")

from inspector.cli import main  # noqa: E402
from inspector.index.export import EXPORTED_TABLES, TYPED, export_parquet  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
UTC = timezone.utc


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("export")
    db, out = base / "index.db", base / "parquet"
    assert main(["index", str(SAMPLES), "--db", str(db), "--jobs", "1", "-q", "--export", "parquet", str(out)]) == 0
    return db, out


def _without_nulls(value):
    """A struct read back holds every key of the column (absent ones null): compare what the row had."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _expected(table: str, column: str, value):
    kind = TYPED.get((table, column))
    if value is None or kind is None:
        return value
    if kind == "bool":
        return bool(value)
    if kind == "epoch-ms":
        return datetime.fromtimestamp(value / 1000, UTC)
    if kind == "iso":
        return datetime.fromisoformat(value).astimezone(UTC)
    return _without_nulls(json.loads(value))


def test_every_table_reads_back_with_typed_columns(exported, capsys):
    db, out = exported
    conn = sqlite3.connect(db)
    for table in EXPORTED_TABLES:
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        rows = conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
        assert rows, table  # the samples have sessions, findings, steps and recorded requests
        got = pq.read_table(out / f"{table}.parquet")
        assert got.column_names == columns
        for row, back in zip(rows, got.to_pylist(), strict=True):
            for column, value in zip(columns, row):
                assert _without_nulls(back[column]) == _expected(table, column, value), (table, column)
    conn.close()


def test_flags_are_booleans_times_are_timestamps_and_json_is_lists_and_structs(exported):
    _, out = exported
    types = {t: pq.read_schema(out / f"{t}.parquet") for t in EXPORTED_TABLES}
    for table, column in (("sessions", "torn"), ("sessions", "compressed"), ("requests", "loop_built")):
        assert types[table].field(column).type == pa.bool_(), (table, column)
    for table, column in (("sessions", "created_at"), ("requests", "time"), ("sessions", "indexed_at")):
        t = types[table].field(column).type
        assert pa.types.is_timestamp(t) and t.tz == "UTC", (table, column, t)
    assert types["requests"].field("codes").type == pa.list_(pa.string())
    usage = types["steps"].field("usage").type
    assert pa.types.is_struct(usage)
    assert {usage.field(i).name: usage.field(i).type for i in range(usage.num_fields)}["inputTokens"] == pa.int64()
    detail = types["findings"].field("detail").type
    assert pa.types.is_struct(detail) and detail.field("changed").type == pa.list_(pa.string())
    # and the values: a DIV001 request has its code in a list, a step's usage sums as integers
    requests = pq.read_table(out / "requests.parquet").to_pylist()
    assert ["DIV001"] in [r["codes"] for r in requests]
    steps = pq.read_table(out / "steps.parquet")
    assert sum(u["inputTokens"] or 0 for u in steps.column("usage").to_pylist() if u) > 0
    created = pq.read_table(out / "sessions.parquet").column("created_at").to_pylist()
    assert all(c is None or c.year >= 2025 for c in created) and any(c is not None for c in created)


def test_steps_join_the_sessions_table_for_their_log_path(exported):
    db, out = exported
    steps = pq.read_table(out / "steps.parquet", columns=["session_id", "idx", "model"])
    sessions = pq.read_table(out / "sessions.parquet", columns=["id", "path"])
    joined = steps.join(sessions, keys="session_id", right_keys="id")
    assert joined.num_rows == steps.num_rows
    conn = sqlite3.connect(db)
    expected = conn.execute(
        "SELECT sessions.path, COUNT(*) FROM steps JOIN sessions ON sessions.id = steps.session_id GROUP BY 1"
    ).fetchall()
    conn.close()
    counts: dict[str, int] = {}
    for path in joined.column("path").to_pylist():
        counts[path] = counts.get(path, 0) + 1
    assert counts == dict(expected)


def test_a_json_part_of_disagreeing_kinds_stays_json_text(exported, tmp_path):
    """``expected`` is a string in one finding's detail and a number or an object in others: that part is
    JSON text, the rest of the detail a struct."""
    db, _ = exported
    copy = tmp_path / "index.db"
    shutil.copy2(db, copy)
    conn = sqlite3.connect(copy)
    ids = [r[0] for r in conn.execute("SELECT id FROM findings ORDER BY id LIMIT 3")]
    values = ["text", 0.7, {"nested": [1, 2]}]
    for i, value in zip(ids, values):
        detail = json.dumps({"expected": value, "count": 3})
        conn.execute("UPDATE findings SET detail = ? WHERE id = ?", (detail, i))
    conn.commit()
    conn.close()
    export_parquet(copy, tmp_path / "out")
    table = pq.read_table(tmp_path / "out" / "findings.parquet")
    detail = table.schema.field("detail").type
    assert detail.field("expected").type == pa.string() and detail.field("count").type == pa.int64()
    rows = {r["id"]: r["detail"] for r in table.to_pylist()}
    assert [json.loads(rows[i]["expected"]) for i in ids] == values
    assert [rows[i]["count"] for i in ids] == [3, 3, 3]


def test_an_empty_table_is_exported_with_its_columns(tmp_path, capsys):
    db, out = tmp_path / "index.db", tmp_path / "parquet"
    clean = SAMPLES / "clean-multi-turn.jsonl"
    assert main(["index", str(clean), "--db", str(db), "--jobs", "1", "-q", "--export", "parquet", str(out)]) == 0
    findings = pq.read_table(out / "findings.parquet")
    assert findings.num_rows == 0 and "rule" in findings.column_names
    assert pq.read_table(out / "sessions.parquet").num_rows == 1


def test_an_unknown_export_format_is_one_line_and_exit_2(tmp_path, capsys):
    code = main(["index", str(SAMPLES), "--db", str(tmp_path / "i.db"), "--export", "csv", str(tmp_path / "x")])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.strip() == "inspector: error: --export csv: the only format is parquet"
    assert not (tmp_path / "i.db").exists()
