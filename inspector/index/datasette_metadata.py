"""Datasette metadata for an index: table descriptions, labels and facets, no plugin.

    python3 -m inspector.index.datasette_metadata [DB] > datasette-metadata.json
    datasette DB --metadata datasette-metadata.json

The metadata ships as ``inspector/data/datasette-metadata.json``, written for
the default database file ``inspector-index.db``.  Datasette keys a database's
metadata by the file's name without its suffix, so this prints it keyed for
``DB`` (default ``inspector-index.db``).
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.resources import files
from pathlib import Path

DEFAULT_DB = "inspector-index.db"  # as inspector.commands.index.DEFAULT_DB


def datasette_metadata(db: str | Path = DEFAULT_DB) -> dict:
    """The shipped metadata, its one database keyed by ``db``'s name as Datasette derives it."""
    doc = json.loads(files("inspector").joinpath("data/datasette-metadata.json").read_text(encoding="utf-8"))
    (database,) = doc["databases"].values()
    doc["databases"] = {Path(db).stem: database}
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m inspector.index.datasette_metadata",
        description="Print Datasette metadata (descriptions, labels, facets) for an index of `inspector index`.",
    )
    parser.add_argument("db", nargs="?", default=DEFAULT_DB, help=f"the index database (default: {DEFAULT_DB})")
    args = parser.parse_args(argv)
    print(json.dumps(datasette_metadata(args.db), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
