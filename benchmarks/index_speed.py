"""How fast is `inspector index` against the floor of merely parsing its input?

Generates a sessions root in the harness layout
(``<root>/--<project>--/<id>/session.jsonl[.zstd]``) of at least 200 sessions
and 200 MB of log text with ``invariants.simulate.large.generate_large`` (every
fifth log zstd-compressed, one frame per 40 lines; a ``requests.jsonl``
capture beside every ``--captures-every``-th session), then prints:

- the parse floor: orjson over every line of every log and capture the index
  reads (zstd decompressed first), one process, warm page cache;
- the first index, in one process (``--jobs 1``) and with worker processes,
  and its ratio to the floor (target <= 2x);
- the no-change re-index of that root, and of a root of 1,000 small sessions
  (target < 1 s per 1,000 sessions);
- a grown root: 10% of the plain logs gain turns, re-indexed incrementally,
  against re-reading those logs in full.

    python benchmarks/index_speed.py [--sessions 200] [--mb 200] [--captures-every 4] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import orjson
import zstandard

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inspector.index import build_index  # noqa: E402
from inspector.index.schedule import default_jobs  # noqa: E402
from invariants.read.zstdio import write_frames  # noqa: E402
from invariants.simulate.large import generate_large  # noqa: E402

BYTES_PER_EVENT = 185  # generate_large's average line, measured


def project(i: int) -> str:
    return f"--home-dev-project-{i % 7}--"


def make_root(root: Path, sessions: int, mb: float, captures_every: int) -> None:
    per = int(mb * 1e6 / sessions)
    for i in range(sessions):
        sid = f"bench-{i:05d}"
        folder = root / project(i) / sid
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / "session.jsonl"
        capture = folder / "requests.jsonl" if captures_every and i % captures_every == 0 else None
        events = max(2_000, per // BYTES_PER_EVENT)
        generate_large(log, capture, events=events, steps=max(10, events // 100), seed=i)
        if i % 5 == 1:
            lines = log.read_bytes().splitlines(keepends=True)
            write_frames(
                folder / "session.jsonl.zstd",
                [lines[0]] + [b"".join(lines[j : j + 40]) for j in range(1, len(lines), 40)],
            )
            log.unlink()


def make_tiny_root(root: Path, sessions: int) -> None:
    """Small real sessions, for the per-session cost of a no-change run."""
    root.mkdir(parents=True, exist_ok=True)
    src = root / "_src.jsonl"
    generate_large(src, None, events=60, steps=2, seed=99)
    lines = src.read_bytes().splitlines(keepends=True)
    src.unlink()
    for i in range(sessions):
        sid = f"tiny-{i:05d}"
        header = orjson.loads(lines[0])
        header["id"] = sid
        folder = root / project(i) / sid
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "session.jsonl").write_bytes(orjson.dumps(header) + b"\n" + b"".join(lines[1:]))


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith((".jsonl", ".jsonl.zstd")))


def text_bytes(p: Path) -> int:
    if not p.name.endswith(".zstd"):
        return p.stat().st_size
    with open(p, "rb") as fh:
        return len(zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True).read())


def parse_floor(paths: list[Path]) -> float:
    loads = orjson.loads
    start = time.perf_counter()
    for p in paths:
        if p.name.endswith(".zstd"):
            with open(p, "rb") as fh:
                data = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True).read()
            for line in data.splitlines():
                loads(line)
        else:
            with open(p, "rb") as fh:
                for line in fh:
                    loads(line)
    return time.perf_counter() - start


def fresh_db(path: Path) -> Path:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return path


def timed_index(root: Path, db: Path, jobs: int) -> tuple[float, object]:
    start = time.perf_counter()
    stats = build_index([root], db, jobs=jobs)
    return time.perf_counter() - start, stats


def grow(root: Path, share: float) -> tuple[list[Path], int]:
    """Append the tail of a longer run of the same session to a share of the plain logs."""
    logs = [p for p in files(root) if p.name == "session.jsonl"]
    picked = logs[:: max(1, int(1 / share))]
    added = 0
    tmp = root.parent / "_grow.jsonl"
    for p in picked:
        i = int(p.parent.name.split("-")[-1])
        old = p.read_bytes()
        events = old.count(b"\n") - 1
        generate_large(tmp, None, events=events + 800, steps=10, seed=i)
        new = tmp.read_bytes()
        if not new.startswith(old):  # the simulator is deterministic per seed: the old log is a prefix
            continue
        with open(p, "ab") as fh:
            fh.write(new[len(old) :])
        added += len(new) - len(old)
    tmp.unlink(missing_ok=True)
    return picked, added


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--mb", type=float, default=200.0, help="total log size to generate (MB)")
    ap.add_argument("--captures-every", type=int, default=4, help="a capture beside every Nth session (0 = none)")
    ap.add_argument("--tiny", type=int, default=1000, help="sessions in the small no-change root")
    ap.add_argument("--jobs", type=int, default=default_jobs())
    ap.add_argument("--repeat", type=int, default=2, help="best of N first-index runs (the machine may be shared)")
    ap.add_argument("--keep", type=Path, help="generate into (and reuse) this folder")
    args = ap.parse_args()

    base = args.keep or Path(tempfile.mkdtemp(prefix="index-speed-"))
    root = base / f"root-{args.sessions}-{args.mb:g}-{args.captures_every}"
    tiny = base / f"tiny-{args.tiny}"
    if not (root / ".done").exists():
        shutil.rmtree(root, ignore_errors=True)
        t = time.perf_counter()
        make_root(root, args.sessions, args.mb, args.captures_every)
        (root / ".done").write_text("ok")
        print(f"generated {root} in {time.perf_counter() - t:.1f}s")
    if not (tiny / ".done").exists():
        shutil.rmtree(tiny, ignore_errors=True)
        make_tiny_root(tiny, args.tiny)
        (tiny / ".done").write_text("ok")
    all_files = files(root)
    logs = [p for p in all_files if p.name.startswith("session.")]
    caps = [p for p in all_files if p.name == "requests.jsonl"]
    log_bytes = sum(p.stat().st_size for p in logs)
    cap_bytes = sum(p.stat().st_size for p in caps)
    log_text = sum(text_bytes(p) for p in logs)
    print(
        f"root: {len(logs)} sessions ({sum(p.suffix == '.zstd' for p in logs)} zstd), {log_text / 1e6:.0f} MB of log "
        "text "
        f"({log_bytes / 1e6:.0f} MB on disk), {len(caps)} captures {cap_bytes / 1e6:.0f} MB; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}"
    )

    parse_floor(all_files)  # warm the page cache
    floor = min(parse_floor(all_files) for _ in range(2))
    floor_logs = parse_floor(logs)
    print(f"parse floor (orjson, every line, logs + captures): {floor:.2f}s   (logs only {floor_logs:.2f}s)")

    db = base / "bench.db"
    results = {}
    for jobs in sorted({1, args.jobs}):
        elapsed, stats = min((timed_index(root, fresh_db(db), jobs) for _ in range(args.repeat)), key=lambda x: x[0])
        assert stats.new == len(logs) and not stats.problems, stats.problems[:3]
        results[jobs] = elapsed
        print(
            f"first index, --jobs {jobs}: {elapsed:.2f}s = {elapsed / floor:.2f}x the parse floor "
            f"({stats.steps_added} steps; db {db.stat().st_size / 1e6:.0f} MB)"
        )

    t, stats = timed_index(root, db, args.jobs)
    assert stats.unchanged == len(logs) and stats.parsed_groups == 0
    print(f"no-change re-index ({len(logs)} sessions): {t:.3f}s = {t * 1000 / len(logs):.3f}s per 1,000 sessions")
    tiny_db = base / "tiny.db"
    timed_index(tiny, fresh_db(tiny_db), args.jobs)
    t, stats = timed_index(tiny, tiny_db, args.jobs)
    assert stats.unchanged == args.tiny and stats.parsed_groups == 0
    print(f"no-change re-index ({args.tiny} small sessions): {t:.3f}s = {t * 1000 / args.tiny:.3f}s per 1,000 sessions")

    picked, added = grow(root, 0.1)
    t, stats = timed_index(root, db, 1)
    assert stats.appended == len(picked), stats.summary()
    full_t, _ = timed_index(root, fresh_db(base / "grown-full.db"), 1)
    only_t = 0.0
    start = time.perf_counter()
    build_index(picked, fresh_db(base / "grown-only.db"), jobs=1)
    only_t = time.perf_counter() - start
    print(
        f"grown root: {len(picked)} logs gained {added / 1e6:.1f} MB; incremental re-index (--jobs 1) {t:.2f}s "
        f"({stats.appended} appended, {stats.steps_added} steps added); indexing those {len(picked)} logs from "
        f"scratch {only_t:.2f}s; the whole grown root from scratch {full_t:.2f}s"
    )
    (root / ".done").unlink()  # the root changed: regenerate next time
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
