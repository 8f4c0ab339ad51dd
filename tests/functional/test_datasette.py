"""The index in Datasette: served through Datasette's own ASGI client (no network), with the shipped metadata.

An index of ``sample_logs/`` is built once for the module; Datasette serves it
in this process and every view that ``inspector/index/README.md`` documents is
queried.  The Datasette commands of docs/INDEX.md are run as written too (the serving
one with ``--get``, which answers one request without starting a server).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from datasette.app import Datasette

from inspector.cli import main
from inspector.index.datasette_metadata import datasette_metadata
from tests.conftest import ROOT, SAMPLES
from tests.support.readme import commands, fenced_blocks, section

DB = "inspector-index"
DIVERGED = "7bb4a066-9210-4919-89c7-a783a0f2372e"  # sample_logs/capture-divergence.jsonl


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("datasette") / f"{DB}.db"
    assert main(["index", str(SAMPLES), "--db", str(db), "--quiet", "--jobs", "1"]) == 0
    return db


@pytest.fixture
def report(capsys) -> dict:
    """What `inspector check sample_logs --format json` says, for comparison."""
    assert main(["check", str(SAMPLES), "--format", "json", "--no-cache", "-q"]) == 1
    return json.loads(capsys.readouterr().out)


def served(db: Path) -> Datasette:
    return Datasette([str(db)], metadata=datasette_metadata(db))


async def get_json(ds: Datasette, path: str):
    response = await ds.client.get(path)
    assert response.status_code == 200, (path, response.text[:500])
    return response.json()


def documented_views() -> list[str]:
    """The view names in the first column of the index README's view table."""
    text = (ROOT / "inspector" / "index" / "README.md").read_text()
    table = text[text.index("\nViews:\n") :].split("\n\n")[1]
    names = []
    for row in table.splitlines()[2:]:
        names += re.findall(r"`(\w+)`", row.split("|")[1])
    return names


def test_the_readme_documents_every_view_of_the_schema(index):
    with sqlite3.connect(index) as conn:
        views = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'view'")}
    assert sorted(documented_views()) == sorted(views)


async def test_every_documented_view_is_served_with_rows(index, report):
    ds = served(index)
    listed = await get_json(ds, f"/{DB}.json")
    assert sorted(v["name"] for v in listed["views"]) == sorted(documented_views())
    rows = {}
    for view in documented_views():
        rows[view] = await get_json(ds, f"/{DB}/{view}.json?_shape=array&_size=max")
        assert rows[view], f"{view}: no rows over sample_logs"
    divergent = {f["session"] for f in report["findings"] if f["category"] == "request-divergence"}
    assert DIVERGED in divergent
    assert {r["uid"] for r in rows["diverged_sessions"] if r["request_divergence"]} == divergent
    assert next(r for r in rows["diverged_sessions"] if r["uid"] == DIVERGED)["first_finding"].startswith("DIV001: ")
    assert {r["path"].rsplit("/", 1)[1] for r in rows["prefix_drift"]} == {"resume-prefix-drift.jsonl"}
    assert {(r["child_uid"], r["parent_id"] is not None) for r in rows["forks"]} == {
        (r["session_uid"], True) for r in rows["fork_chains"] if r["depth"] == 1
    }
    counts = [r["findings"] for r in rows["finding_counts"]]
    assert counts == sorted(counts, reverse=True)  # the metadata's sort_desc


async def test_findings_are_faceted_by_rule_and_severity_as_check_reports_them(index, report):
    data = await get_json(served(index), f"/{DB}/findings.json")
    facets = {name: {r["value"]: r["count"] for r in f["results"]} for name, f in data["facet_results"].items()}
    assert list(facets) == ["rule", "severity", "category"]  # from the metadata: no _facet in the request
    assert facets["rule"] == Counter(f["rule"] for f in report["findings"])
    assert facets["severity"] == Counter(f["severity"] for f in report["findings"])
    assert facets["category"] == Counter(f["category"] for f in report["findings"])


async def test_rows_point_at_sessions_by_their_id_and_tables_are_described(index):
    ds = served(index)
    findings = await get_json(ds, f"/{DB}/findings.json?_shape=array&_labels=on&rule=DIV001&severity=error")
    (div,) = findings
    assert div["session_id"]["label"] == DIVERGED
    page = await ds.client.get(f"/{DB}/findings")
    assert "What `inspector check` reports, one row per finding." in page.text
    assert "first differing JSON path of a divergence" in page.text  # a column description
    tables = {t["name"]: t for t in (await get_json(ds, f"/{DB}.json"))["tables"]}
    assert tables["checkpoints"]["hidden"] and not tables["findings"]["hidden"]


async def test_messages_and_findings_have_full_text_search(index):
    ds = served(index)
    hits = await get_json(ds, f"/{DB}/findings.json?_shape=array&_search=temperature")
    assert [(f["rule"], f["path"]) for f in hits] == [("DIV010", "temperature")]
    messages = await get_json(ds, f"/{DB}/messages.json?_shape=array&_search=Python")
    assert messages and all("python" in m["text"].lower() for m in messages)


def test_the_metadata_names_only_tables_and_columns_the_index_has(index):
    (database,) = datasette_metadata(index)["databases"].values()
    with sqlite3.connect(index) as conn:
        for table, meta in database["tables"].items():
            columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            assert columns, f"metadata describes {table}, which the index does not have"
            named = set(meta.get("columns", {})) | set(meta.get("facets", []))
            named |= {meta[k] for k in ("label_column", "sort_desc") if k in meta}
            assert named <= columns, f"{table}: {sorted(named - columns)}"


def test_the_metadata_is_keyed_by_the_database_file_name():
    assert list(datasette_metadata("/somewhere/postmortem.db")["databases"]) == ["postmortem"]
    assert list(datasette_metadata()["databases"]) == [DB]


def test_the_documented_commands_index_and_serve(tmp_path):
    block = [
        b
        for b in fenced_blocks(
            section((ROOT / "docs" / "INDEX.md").read_text(), "## Browse the index in Datasette"), "sh"
        )
        if "datasette " in b
    ]
    assert len(block) == 1
    lines = commands(block[0])
    assert lines[0] == "inspector index ~/.dsh/sessions"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    outputs = []
    for line in lines:
        line = line.replace("~/.dsh/sessions", str(SAMPLES))
        if line.startswith("datasette ") and "--get" not in line:
            line += f" --get /{DB}/findings.json"  # the same server, asked one question
        done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (line, done.stderr)
        outputs.append(done.stdout)
    assert json.loads((tmp_path / "datasette-metadata.json").read_text()) == datasette_metadata()
    assert list(json.loads(outputs[2])["facet_results"]) == ["rule", "severity", "category"]
    counts = json.loads(outputs[3])
    assert {r["rule"] for r in counts} >= {"DIV001", "HDR002", "PFX001"}


def test_metadata_module_prints_json_for_a_named_database(capsys):
    from inspector.index.datasette_metadata import main as metadata_main

    assert metadata_main(["elsewhere/other.db"]) == 0
    assert list(json.loads(capsys.readouterr().out)["databases"]) == ["other"]
