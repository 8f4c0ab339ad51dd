"""Rewrite a log in the late-era storage form: packed chunk rows, zstd frames.

The late JSONL backend stores a session as ``session.jsonl.zstd`` under
``<root>/--<projectKey(cwd)>--/<encodedId>/`` (LOG-FORMAT.md §1.1): frame 1
holds the header line, every later frame one durable append batch of
complete lines, and runs of three or more delta chunks are packed into
``text-chunks``/``reasoning-chunks``/``tool-call-chunks`` rows (§1.4, §1.5).
:func:`convert_log` produces exactly that from any log, keeping every other
line byte for byte, so a checker must judge the result like the original;
the tests use it to prove that, and the simulator to write late samples.

Usage: ``python -m invariants.simulate.convert SRC... DEST [--plain] [--no-pack] [--project-layout]``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Iterable

import orjson

from invariants.analysis.forks import encode_id
from invariants.model.inert import inert
from invariants.model.jsonvalue import MAX_DEPTH, too_deep
from invariants.read.chunk_rows import CHUNK_ROW_TYPES, ChunkRowError, expand_row, pack_events
from invariants.read.discover import discover
from invariants.read.source import strip_log_suffix
from invariants.read.zstdio import write_frames


class ConvertError(ValueError):
    """A log that cannot be rewritten; the message names the file and line."""


def _parse(raw: bytes, src: Path | str, number: int) -> object:
    """One line as JSON, or the raw bytes when it does not parse (kept verbatim).

    A line nested deeper than the reader's limit is refused before any parser
    sees it: orjson recurses while it builds values, and very deep nesting
    overflows the C stack.
    """
    if too_deep(raw):
        raise ConvertError(f"{src}: line {number}: nesting deeper than {MAX_DEPTH} levels; the log was not converted")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw


_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def project_key(cwd: str) -> str:
    """The late backend's project directory name for ``cwd`` (``projectKey`` in format.ts @ HEAD)."""
    if not cwd:
        raise ValueError("cannot encode an empty project path")
    units = cwd.encode("utf-16-le", "surrogatepass")
    out: list[str] = []
    run = False
    for i in range(0, len(units), 2):
        u = units[i] | (units[i + 1] << 8)
        c = chr(u)
        if c in "/\\:":
            if not run:
                out.append("-")
            run = True
        elif c in _SAFE:
            out.append(c)
            run = False
        else:
            out.append(f"~{u:04X}")
            run = False
    slug = "".join(out).lstrip("-") or "root"
    return f"--{slug[:251]}--"


def session_path(root: Path, header: dict, compressed: bool = True) -> Path:
    """``<root>/--<project>--/<encodedId>/session.jsonl[.zstd]`` (``_no-cwd`` without a cwd)."""
    cwd = header.get("cwd")
    project = project_key(cwd) if isinstance(cwd, str) and cwd else "_no-cwd"
    return root / project / encode_id(str(header["id"])) / ("session.jsonl.zstd" if compressed else "session.jsonl")


def storage_lines(
    lines: list[bytes], pack: bool = True, src: Path | str = "log"
) -> tuple[bytes, list[tuple[bytes, bool]]]:
    """The header line and the stored lines after it, each with ``ends_batch``.

    Existing chunk rows are expanded first, so the output's rows are exactly
    what the encoder makes of the events (``pack``) or there are none.  Lines
    that cannot be parsed, or rows that do not decode, are kept verbatim.  A
    batch ends after every ``turn/end`` (the seed era's flush point and a
    natural late-era flush), so a log of several turns spans several frames.
    """
    header, rest = lines[0], lines[1:]
    _parse(header, src, 1)
    parsed: list = []
    original: dict[int, bytes] = {}
    for number, raw in enumerate(rest, 2):
        obj = _parse(raw, src, number)
        if isinstance(obj, dict) and type(obj.get("type")) is str and obj["type"] in CHUNK_ROW_TYPES and "seq0" in obj:
            try:
                parsed.extend(expand_row(obj))
                continue
            except ChunkRowError:
                obj = raw
        if isinstance(obj, dict):
            original[id(obj)] = raw
        parsed.append(obj)
    records = pack_events(parsed) if pack else parsed
    out: list[tuple[bytes, bool]] = []
    for rec in records:
        if isinstance(rec, bytes):
            out.append((rec, False))
            continue
        verbatim = original.get(id(rec))
        text = verbatim if verbatim is not None else orjson.dumps(rec)
        out.append((text, isinstance(rec, dict) and rec.get("type") == "turn/end"))
    return header, out


def batches(header: bytes, stored: list[tuple[bytes, bool]], max_lines: int = 64) -> list[bytes]:
    """Frame payloads: the header alone, then batches of complete lines."""
    frames = [header + b"\n"]
    cur: list[bytes] = []
    for text, ends in stored:
        cur.append(text)
        if ends or len(cur) >= max_lines:
            frames.append(b"\n".join(cur) + b"\n")
            cur = []
    if cur:
        frames.append(b"\n".join(cur) + b"\n")
    return frames


def read_lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    if path.name.endswith((".zstd", ".zst")):
        from invariants.read.zstdio import iter_frames

        with open(path, "rb") as fh:
            data = b"".join(iter_frames(fh))
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def convert_log(src: Path, dst: Path, pack: bool = True, compress: bool = True, max_lines: int = 64) -> Path:
    """Write ``src`` to ``dst`` in late storage form; returns ``dst``."""
    lines = read_lines(src)
    if not lines:
        raise ValueError(f"{src}: empty log")
    header, stored = storage_lines(lines, pack, src)
    dst.parent.mkdir(parents=True, exist_ok=True)
    frames = batches(header, stored, max_lines)
    if compress:
        write_frames(dst, frames)
    else:
        dst.write_bytes(b"".join(frames))
    return dst


def convert_tree(
    sources: Iterable[Path],
    dest: Path,
    pack: bool = True,
    compress: bool = True,
    project_layout: bool = False,
    base: Path | None = None,
) -> list[Path]:
    """Convert several logs into ``dest``: flat (same relative names) or as a project/session root."""
    out = []
    for src in sources:
        if project_layout:
            header = _parse(read_lines(src)[0], src, 1)
            if not isinstance(header, dict) or "id" not in header:
                raise ConvertError(f"{src}: line 1: not a session header; the log was not converted")
            dst = session_path(dest, header, compress)
        else:
            rel = src.relative_to(base) if base is not None and src.is_relative_to(base) else Path(src.name)
            name = strip_log_suffix(rel.name) + (".jsonl.zstd" if compress else ".jsonl")
            dst = dest / rel.parent / name
        out.append(convert_log(src, dst, pack, compress))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m invariants.simulate.convert", description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", metavar="PATH", help="logs or folders, then the destination folder")
    ap.add_argument("--plain", action="store_true", help="write .jsonl instead of .jsonl.zstd")
    ap.add_argument("--no-pack", action="store_true", help="keep chunk events one per line")
    ap.add_argument("--project-layout", action="store_true", help="lay out --<project>--/<id>/session.jsonl.zstd")
    args = ap.parse_args(argv)
    if len(args.paths) < 2:
        ap.error("give at least one source and a destination")
    *srcs, dest = args.paths
    sources, problems = discover(srcs)
    for p in problems:
        print(f"convert: {p}", file=sys.stderr)
    base = Path(os.path.commonpath([str(Path(s).resolve()) for s in srcs])) if srcs else None
    base = base if base and base.is_dir() else None
    files = [s.path.resolve() for s in sources if s.member is None and isinstance(s.path, Path)]
    problems += [f"{s.path}: converted from local paths only" for s in sources if not isinstance(s.path, Path)]
    written: list[Path] = []
    for f in files:
        try:
            written += convert_tree([f], Path(dest), not args.no_pack, not args.plain, args.project_layout, base)
        except ConvertError as exc:
            print(f"convert: {inert(str(exc))}", file=sys.stderr)
            problems.append(str(exc))
    print(f"{len(written)} log(s) written under {dest}")
    return 2 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
