"""How does ``inspector check`` scale: serial, ``--jobs 2`` and a 2-worker Dask LocalCluster, against the parse floor?

Generates N sessions in the harness layout (one folder each, so one unit
each; a ``requests.jsonl`` capture beside every fourth; ``--layout cwd``: the
seed-era layout, ``cwd-<hash12>/<id>.jsonl`` with ``<id>.requests.jsonl``,
a project folder of ``--per-folder`` sessions (default ``--templates``, else
1,000; as many as ``--sessions``: one flat folder); ``--no-captures``:
none) with
``invariants.simulate.large.generate_large`` in one of three ``SHAPES``
(``--shape``: ``long``, the default, ~360 lines, 3 steps of long replies;
``steps``, ~140 lines, 11 steps of short replies, the ~117-event sessions
issue 30 names; ``small``, ~37 lines, one step; a check's cost per line
differs by shape, so a ratio holds for the shape it was measured on;
``--templates K``: K distinct sessions, the rest hard
links to them, so 100,000 folders cost the disk of K; ``--forks``: every
second session a fork of the one before it, as a subagent's is, every
session with an id of its own; ``--faults K``: sessions 0..K-1 given one
finding's cause each (a damaged line, a torn tail, a seq out of place, a
request the log does not explain: :func:`inject_faults`), the same K in a
root of any size, so two sizes compare at a constant number of findings, as
issue 30's memory target reads); ``--from-corpus DIR``: copies of real
logs instead (:func:`make_corpus_root`: every folder of a corpus such as
``../shared/corpus`` that holds one log whose check finds nothing, with
its capture, renamed per copy; every file written, ~18 KB a session); ``--zstd LINES``: every
generated log rewritten as the late harness stores it (:func:`late_storage`: ``session.jsonl.zstd``,
packed chunk rows, a zstd frame per LINES lines, as its 200 ms append batches), then, for each mode,
runs ``inspector check ROOT --format json --no-cache -q`` in a fresh process
(``--cache``: with the result cache on, as ``inspector check`` runs by default,
each mode twice, ``MODE/cold`` in a fresh cache folder, then ``MODE/warm``
from it: the cache is memory of its own, and measuring only ``--no-cache``
once missed a folder's plan key that grew 4x; ``--progress``: without ``-q``,
as a CI job runs it, progress lines on stderr and the total counted meanwhile,
which cost a check 20-30 % while it was counted by a thread of the check) and prints: wall time,
the *parse floor* (a fresh process that walks the root and parses every line of every ``.jsonl``,
and of every ``.jsonl.zstd`` decompressed, with orjson), their ratio,
peak RSS of the client process and summed over the whole process tree
(client + pool or Dask workers, sampled every 50 ms), and whether the JSON
report is byte-identical to the serial one.  The floor and the checks take
turns (floor, check, floor, check...) and each ratio is against the mean of
the floors around it, so a machine whose load drifts compares like with
like; one untimed floor reads the root first (the first read of a root just
written, or after another root was read, ran 10-60 % slow).  The per-task
overhead of Dask is measured apart: a no-op task round trip, one at a time
and 1,000 at once.

Children run as an installed tool does: with the bytecode cache on (in a
temporary folder, even when ``PYTHONDONTWRITEBYTECODE`` is set, as pip
compiles on install), and each mode runs once untimed on one session log
first, so no timed run compiles a module (``distributed`` alone took 0.77 s
to import from source against 0.22 s from its cache).

    python benchmarks/fleet.py [--sessions 200] [--keep DIR] [--modes serial,jobs2,dask]
    python benchmarks/fleet.py --sessions 10000 --templates 1000 --keep /tmp/f10k
    python benchmarks/fleet.py --sessions 10000 --shape steps --templates 1000 --keep /tmp/m10k
    python benchmarks/fleet.py --sessions 100000 --shape small --templates 1000 --keep /tmp/f100k
    python benchmarks/fleet.py --sessions 10000 --templates 1000 --layout cwd --no-captures --keep /tmp/c10k
    python benchmarks/fleet.py --sessions 100000 --shape small --templates 1000 --forks --keep /tmp/k100k
    python benchmarks/fleet.py --sessions 100000 --shape small --templates 1000 --faults 40 --keep /tmp/e100k
    python benchmarks/fleet.py --sessions 10000 --from-corpus ../shared/corpus --keep /tmp/r10k
    python benchmarks/fleet.py --sessions 10000 --shape steps --templates 1000 --faults 40 --zstd 4 --keep /tmp/z10k
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable, Sequence

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.check_speed import child_env  # noqa: E402
from invariants.read.zstdio import write_frames  # noqa: E402
from invariants.simulate.convert import batches, storage_lines  # noqa: E402
from invariants.simulate.large import generate_large  # noqa: E402


def make_root(
    root: Path,
    sessions: int,
    events: int = 120,
    steps: int = 3,
    templates: int = 0,
    layout: str = "project",
    captures: bool = True,
    forks: bool = False,
    per_folder: int = 1000,
) -> None:
    """``sessions`` logs in ``layout`` (:func:`paths`), a capture beside every fourth (none without
    ``captures``).  ``templates`` > 0: that many distinct sessions are generated (a multiple of 4) and
    the rest are hard links to them (a 100,000-session root costs the disk of ``templates``; every
    folder is still listed and every log read).  ``forks``: every second session is a fork of the one
    before it (:func:`write_fork`), and every session has an id of its own (copies of a template are
    written with their own id, not linked), so each child has exactly one parent.  ``per_folder``:
    sessions a ``cwd`` project folder; when a folder holds more than ``templates``, copies are written
    with their own id too, so no id repeats in a folder."""
    made: list[tuple[Path, Path]] = []
    own_ids = forks or (layout == "cwd" and templates and per_folder > templates)
    for i in range(sessions):
        log, capture = paths(root, i, layout, per_folder, forks)
        log.parent.mkdir(parents=True, exist_ok=True)
        with_capture = captures and i % 4 == 0
        if forks and i % 2:
            write_fork(paths(root, i - 1, layout, per_folder, forks)[0], log, fleet_id(i))
            continue
        if own_ids and templates and i >= templates:
            # (with forks, made holds the parents: the even templates)
            src_log, src_capture = made[i % templates // 2 if forks else i % templates]
            old, new = own_id(src_log), fleet_id(i).encode()
            log.write_bytes(src_log.read_bytes().replace(old, new))
            if with_capture:
                named = b'"sessionFile":"%s"' % src_log.name.encode()  # the capture names its log's file too
                own = b'"sessionFile":"%s"' % log.name.encode()
                capture.write_bytes(src_capture.read_bytes().replace(old, new).replace(named, own))
            continue
        if templates and i >= templates:
            src_log, src_capture = made[i % templates]
            os.link(src_log, log)
            if with_capture:
                os.link(src_capture, capture)
            continue
        generate_large(log, capture, events=events, steps=steps, seed=i)
        made.append((log, capture))
        if not with_capture:
            capture.unlink()


FAULTS = ("request", "damaged", "torn", "seq")


def inject_faults(root: Path, faults: int, layout: str, per_folder: int, forks: bool, captures: bool) -> None:
    """Give sessions ``0..faults-1`` a finding's cause each, by ``i % 4`` (:data:`FAULTS`): a request
    line the log does not explain (an extra field; sessions without a capture get a damaged line
    instead), a line cut short mid-log, a torn last line, a seq out of place.  A changed file is
    written anew and renamed over its name, so the template it was linked to keeps its bytes."""
    for i in range(faults):
        log, capture = paths(root, i, layout, per_folder, forks)
        kind = FAULTS[i % 4]
        if kind == "request" and not (captures and capture.exists()):
            kind = "damaged"
        target = capture if kind == "request" else log
        lines = target.read_bytes().split(b"\n")  # the last item is b"" after the final newline
        if kind == "seq" and not any(isinstance(_seq(line), int) for line in lines):
            kind = "damaged"  # a projected snapshot's lines have no seq
        if kind == "request":
            line = json.loads(lines[0])
            line["request"]["faultInjected"] = True
            lines[0] = json.dumps(line, separators=(",", ":")).encode()
        elif kind == "damaged":
            at = _middle(lines, lambda line: bool(line.strip()))
            lines[at] = lines[at][:20]
        elif kind == "torn":
            last = max(k for k, line in enumerate(lines) if line.strip())
            lines = lines[:last] + [lines[last][: len(lines[last]) // 2]]
        else:
            at = _middle(lines, lambda line: isinstance(_seq(line), int))
            seq = _seq(lines[at])
            lines[at] = lines[at].replace(f'"seq":{seq},'.encode(), f'"seq":{seq + 1000},'.encode(), 1)
        fresh = target.with_name(target.name + ".fault")
        fresh.write_bytes(b"\n".join(lines))
        os.replace(fresh, target)


UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def corpus_templates(corpus: Path) -> list[tuple[bytes, bytes | None]]:
    """(log, capture or None) of every folder under ``corpus`` that holds one log, sorted by path, whose
    check finds nothing (so a root of copies has no finding at any size: the memory target's constant)."""
    folders = sorted({p.parent for p in corpus.rglob("*.jsonl") if not p.name.endswith("requests.jsonl")})
    found = subprocess.run(
        [sys.executable, "-m", "inspector.cli", "check", str(corpus), "--format", "json", "--no-cache", "-q"],
        capture_output=True,
        check=False,
    )
    flagged = {f["file"] for f in json.loads(found.stdout)["findings"]}
    out = []
    for folder in folders:
        logs = [p for p in folder.iterdir() if p.name.endswith(".jsonl") and not p.name.endswith("requests.jsonl")]
        if len(logs) != 1 or str(logs[0]) in flagged:
            continue
        capture = folder / "requests.jsonl"
        out.append((logs[0].read_bytes(), capture.read_bytes() if capture.exists() else None))
    return out


def make_corpus_root(root: Path, sessions: int, corpus: Path) -> None:
    """``sessions`` copies of the corpus's :func:`corpus_templates` in the harness layout, a folder
    each: copy ``k`` of a template has every UUID in its log and capture renamed (``uuid5`` of ``k``
    and the UUID), so copies never share a session id (ids that are no UUID, such as a test's ``a1``,
    repeat as in the corpus)."""
    templates = corpus_templates(corpus)
    for i in range(sessions):
        log, capture = templates[i % len(templates)]
        k = i // len(templates)
        if k:

            def renamed(m: re.Match[bytes], k: int = k) -> bytes:
                return str(uuid.uuid5(uuid.NAMESPACE_OID, f"{k}:{m.group().decode()}")).encode()

            log = UUID.sub(renamed, log)
            capture = UUID.sub(renamed, capture) if capture is not None else None
        path, capture_path = paths(root, i, "project", 0)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(log)
        if capture is not None:
            capture_path.write_bytes(capture)


def _middle(lines: list[bytes], fits: Callable[[bytes], bool]) -> int:
    """The line nearest the middle of a log (its header aside) that ``fits``: a real log's middle line
    may be blank or a header."""
    mid = len(lines) // 2
    fit = [k for k in range(1, len(lines)) if fits(lines[k])] or [0]  # (a log of a header alone: the header)
    return min(fit, key=lambda k: (abs(k - mid), k))


def _seq(line: bytes) -> object:
    """A line's seq, or None when it is no event."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value.get("seq") if isinstance(value, dict) else None


def fleet_id(i: int) -> str:
    """Session ``i``'s own id (a UUID, as the harness's)."""
    return str(uuid.UUID(int=i + 1))


def own_id(log: Path) -> bytes:
    """The id in ``log``'s header, as the bytes that spell it."""
    with open(log, "rb") as fh:
        return json.loads(fh.readline())["id"].encode()


def write_fork(parent: Path, child: Path, child_id: str) -> None:
    """A fork of ``parent`` as the harness's store writes one: a header naming the parent and the seed's
    length, then the parent's events (the whole log, which ends on a closed turn) as the seed."""
    lines = parent.read_bytes().splitlines()
    head = json.loads(lines[0])
    head.update(id=child_id, createdAt=head["createdAt"] + 1, parentSession=head["id"], seedLength=len(lines) - 1)
    child.write_bytes(b"\n".join([json.dumps(head, separators=(",", ":")).encode(), *lines[1:]]) + b"\n")


def paths(root: Path, i: int, layout: str, per_folder: int, forks: bool = False) -> tuple[Path, Path]:
    """Session ``i``'s log and capture.  ``project``: today's harness, a folder a session under seven
    project folders.  ``cwd``: the seed era's, every session of a project in its folder, ``per_folder``
    sessions a project (a template's copies land in different projects: no id repeats in a folder).
    ``forks``: a child (odd ``i``) in its parent's project, as a fork keeps its parent's cwd."""
    if layout == "project":
        folder = root / f"--home-dev-project-{(i - i % 2 if forks else i) % 7}--" / f"fleet-{i:06d}"
        return folder / "session.jsonl", folder / "requests.jsonl"
    folder = root / f"cwd-{i // per_folder:012x}"
    return folder / f"fleet-{i:06d}.jsonl", folder / f"fleet-{i:06d}.requests.jsonl"


def first_log(root: Path) -> Path | None:
    """A log under ``root`` (a root already generated), or None."""
    logs = (p for p in root.rglob("*.jsonl*") if p.name.endswith((".jsonl", ".jsonl.zstd")))
    return next((p for p in logs if not p.name.endswith("requests.jsonl")), None)


def late_storage(root: Path, batch: int) -> None:
    """Rewrite every log under ``root`` as the late harness stores one: ``.jsonl.zstd`` with packed chunk
    rows (:mod:`invariants.simulate.convert`), one zstd frame per ``batch`` stored lines and after each
    ``turn/end`` (the harness writes an append batch every 200 ms of streaming), and the header's
    ``delegationDepth`` the late reader requires.  A log linked to a template is converted once and
    linked again."""
    done: dict[tuple[int, int], Path] = {}
    for folder, _, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith(".jsonl") or name.endswith("requests.jsonl"):
                continue
            log = Path(folder, name)
            zstd, st = log.with_name(name + ".zstd"), log.stat()
            if (st.st_dev, st.st_ino) in done:
                os.link(done[st.st_dev, st.st_ino], zstd)
            else:
                header, stored = storage_lines(log.read_bytes().split(b"\n")[:-1] or [b""], True, log)
                fields = json.loads(header)
                fields.setdefault("delegationDepth", 0)
                write_frames(zstd, batches(json.dumps(fields, separators=(",", ":")).encode(), stored, batch))
                done[st.st_dev, st.st_ino] = zstd
            log.unlink()


SHAPES = {  # generate_large's least events and steps, and whether replies are short (short_replies)
    "long": (120, 3, False),
    "steps": (117, 6, True),
    "small": (10, 1, True),
}


def short_replies() -> None:
    """Make :func:`generate_large` write short replies (a few words of reasoning and text a step): with
    one step, ~37-line sessions for the 100,000-session root, so it fits the disk and a run fits an
    afternoon."""
    import random

    from invariants.simulate import large

    def reply(rng: random.Random, final: bool, vocabulary: Sequence[str]) -> large.Reply:
        prose = large._prose
        return large.Reply(reasoning=prose(rng, rng.randint(2, 4), vocabulary), text=prose(rng, 2, vocabulary))

    large._large_reply = reply  # type: ignore[assignment]


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, float, bytes, int]:
    """Wall seconds, client peak RSS MB, tree peak RSS MB, stdout, exit code."""
    out_path = Path(tempfile.mkstemp(suffix=".json")[1])
    started = time.perf_counter()
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env)
        top = psutil.Process(proc.pid)
        client_peak = tree_peak = 0
        while proc.poll() is None:
            try:
                procs = [top, *top.children(recursive=True)]
                rss = [p.memory_info().rss for p in procs]
            except psutil.Error:
                rss = []
            if rss:
                client_peak = max(client_peak, rss[0])
                tree_peak = max(tree_peak, sum(rss))
            time.sleep(0.05)
    wall = time.perf_counter() - started
    data = out_path.read_bytes()
    out_path.unlink()
    return wall, client_peak / 1e6, tree_peak / 1e6, data, proc.returncode


FLOOR = """
import io, os, sys, orjson, zstandard
loads = orjson.loads
unzstd = zstandard.ZstdDecompressor()
n = 0
for folder, _, names in os.walk(sys.argv[1]):
    for name in names:
        if name.endswith((".jsonl", ".jsonl.zstd")):
            with open(os.path.join(folder, name), "rb") as fh:
                if name.endswith(".zstd"):
                    fh = io.BytesIO(unzstd.stream_reader(fh, read_across_frames=True).read())
                for line in fh:
                    if line.strip():
                        try:  # a damaged line (--faults) is parsed as far as it goes, as a check does
                            loads(line)
                        except ValueError:
                            pass
                        n += 1
print(n)
"""


def floor(root: Path, env: dict[str, str]) -> float:
    """Wall seconds of a fresh process parsing every line under ``root`` with orjson."""
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR, str(root)], check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t


def task_overhead() -> tuple[float, float]:
    """Milliseconds per no-op Dask task on a 2-worker LocalCluster: one at a time, and 1,000 at once."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as c,
        Client(c) as client,
    ):
        client.submit(int, 0, pure=False).result()  # warm
        t = time.perf_counter()
        for i in range(100):
            client.submit(int, i, pure=False).result()
        one = (time.perf_counter() - t) / 100 * 1e3
        t = time.perf_counter()
        client.gather(client.map(int, range(1000), pure=False))
        many = (time.perf_counter() - t) / 1000 * 1e3
    return one, many


MODES = {"serial": ["--jobs", "1"], "jobs2": ["--jobs", "2"], "dask": ["--scheduler", "local:2"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--keep", metavar="DIR", help="generate into (or reuse) DIR and keep it")
    ap.add_argument("--shape", choices=tuple(SHAPES), default="long", help="sessions' shape (see above)")
    ap.add_argument("--templates", type=int, default=0, help="distinct sessions (a multiple of 4); the rest link")
    ap.add_argument("--modes", default="serial,jobs2,dask", help="comma-separated: serial, jobs2, dask")
    ap.add_argument("--no-overhead", action="store_true", help="skip the Dask per-task measurement")
    ap.add_argument("--layout", choices=("project", "cwd"), default="project", help="harness layout (see above)")
    ap.add_argument("--no-captures", action="store_true", help="no capture beside any session")
    ap.add_argument("--forks", action="store_true", help="every second session a fork of the one before it")
    ap.add_argument("--faults", type=int, default=0, help="sessions 0..K-1 given a finding each (see above)")
    ap.add_argument("--per-folder", type=int, default=0, help="--layout cwd: sessions a project folder (see above)")
    ap.add_argument("--from-corpus", metavar="DIR", help="copies of real logs (see above) instead of generated ones")
    ap.add_argument("--cache", action="store_true", help="with the result cache on: each mode cold, then warm")
    ap.add_argument("--zstd", type=int, metavar="LINES", help="late storage: zstd frames of LINES lines (see above)")
    ap.add_argument(
        "--progress", action="store_true", help="without -q: a CI log's progress lines, the total counted meanwhile"
    )
    args = ap.parse_args()

    per_folder = args.per_folder or args.templates or 1000
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    cache = tempfile.TemporaryDirectory(prefix="fleet-pycache-")
    try:
        if first_log(root) is None and args.from_corpus:
            t = time.perf_counter()
            try:
                make_corpus_root(root, args.sessions, Path(args.from_corpus))
                inject_faults(root, args.faults, "project", 0, False, True)
            except BaseException:
                shutil.rmtree(root, ignore_errors=True)  # a root half made would be reused as it is
                raise
            print(f"copied {args.sessions} corpus sessions in {time.perf_counter() - t:.1f}s under {root}")
        if first_log(root) is None:
            events, steps, short = SHAPES[args.shape]
            if short:
                short_replies()
            t = time.perf_counter()
            make_root(
                root,
                args.sessions,
                events=events,
                steps=steps,
                templates=args.templates,
                layout=args.layout,
                captures=not args.no_captures,
                forks=args.forks,
                per_folder=per_folder,
            )
            inject_faults(root, args.faults, args.layout, per_folder, args.forks, not args.no_captures)
            if args.zstd:
                late_storage(root, args.zstd)
            print(f"generated {args.sessions} sessions in {time.perf_counter() - t:.1f}s under {root}")
        env = child_env(Path(cache.name))
        base = [sys.executable, "-m", "inspector.cli", "check", "--format", "json"] + ([] if args.progress else ["-q"])
        modes = args.modes.split(",")
        one = first_log(root)
        assert one is not None
        for name in dict.fromkeys(modes):  # fills the bytecode cache: no timed run compiles
            run(base + [str(one), "--no-cache"] + MODES[name], env)
        runs: list[tuple[str, list[str]]] = []
        for name in modes:
            if not args.cache:
                runs.append((name, MODES[name] + ["--no-cache"]))
                continue
            results = Path(cache.name, f"results-{len(runs)}")  # (a fresh folder: the first run is cold)
            for temperature in ("cold", "warm"):
                runs.append((f"{name}/{temperature}", MODES[name] + ["--cache-dir", str(results)]))
        ref = None
        print(f"{'mode':<11} {'wall s':>8} {'floor s':>8} {'ratio':>6} {'client MB':>10} {'tree MB':>9}  report")
        floor(root, env)  # untimed: the first read of a root (just written, or after another root) ran 10-60 % slow
        before = floor(root, env)
        for name, flags in runs:
            wall, client_mb, tree_mb, data, code = run(base + [str(root)] + flags, env)
            after = floor(root, env)
            fl = (before + after) / 2
            before = after
            digest = hashlib.sha256(data).hexdigest()[:12]
            ref = ref or digest
            same = "identical" if digest == ref else f"DIFFERENT ({digest})"
            row = f"{name:<11} {wall:8.1f} {fl:8.2f} {wall / fl:6.2f} {client_mb:10.0f} {tree_mb:9.0f}"
            print(f"{row}  {same} (exit {code})", flush=True)
        if not args.no_overhead and "dask" in args.modes:
            one, many = task_overhead()
            print(f"dask no-op task: {one:.1f} ms one at a time, {many:.2f} ms each in a batch of 1000")
    finally:
        cache.cleanup()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
