"""``inspector index --export parquet DIR``: the findings, steps and requests tables, read back equal."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

pq = pytest.importorskip("pyarrow.parquet", reason="the fleet extra (pyarrow) is not installed")

from inspector.cli import main  # noqa: E402
from inspector.index.export import EXPORTED_TABLES  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"


def test_the_parquet_tables_read_back_equal_the_sqlite_tables(tmp_path, capsys):
    db, out = tmp_path / "index.db", tmp_path / "parquet"
    assert main(["index", str(SAMPLES), "--db", str(db), "--jobs", "1", "--export", "parquet", str(out)]) == 0
    err = capsys.readouterr().err
    conn = sqlite3.connect(db)
    for table in EXPORTED_TABLES:
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        rows = conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
        assert rows, table  # the samples have findings, steps and recorded requests
        got = pq.read_table(out / f"{table}.parquet")
        assert got.column_names == columns
        assert [tuple(r[c] for c in columns) for r in got.to_pylist()] == rows
        assert f"{len(rows)} {table}" in err
    conn.close()


def test_an_empty_table_is_exported_with_its_columns(tmp_path, capsys):
    db, out = tmp_path / "index.db", tmp_path / "parquet"
    clean = SAMPLES / "clean-multi-turn.jsonl"
    assert main(["index", str(clean), "--db", str(db), "--jobs", "1", "-q", "--export", "parquet", str(out)]) == 0
    findings = pq.read_table(out / "findings.parquet")
    assert findings.num_rows == 0 and "rule" in findings.column_names


def test_an_unknown_export_format_is_one_line_and_exit_2(tmp_path, capsys):
    code = main(["index", str(SAMPLES), "--db", str(tmp_path / "i.db"), "--export", "csv", str(tmp_path / "x")])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.strip() == "inspector: error: --export csv: the only format is parquet"
    assert not (tmp_path / "i.db").exists()
