"""Prove a change left every finding as it was: diff the JSON report against a saved reference.

Runs ``inspector check TARGET --format json --no-cache -q`` (a fresh process,
no result cache) on ``sample_logs/`` and on the whole ``../shared/corpus``
(skipped with a note when it is absent) and compares each report with the
reference saved earlier, byte for byte.  On a difference it lists the findings
that appeared, disappeared or changed (by rule, file, line, seq) and the
summary and session rows that differ.

    python benchmarks/findings_unchanged.py --save DIR   # before the change: write DIR/sample.json, DIR/corpus.json
    python benchmarks/findings_unchanged.py --ref DIR    # after it: exit 0 when both reports are byte-identical

Exit code 0 when identical, 1 when a report differs, 2 when a reference is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Named relative to the repository root, as the reports name their files.
TARGETS = {"sample": Path("sample_logs"), "corpus": Path("../shared/corpus")}
_CHILD = "import sys\nfrom inspector.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def report(target: Path) -> bytes:
    """The JSON report of ``inspector check`` on ``target`` (exit 0 or 1 expected: samples diverge on purpose)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, "check", str(target), "--format", "json", "--no-cache", "-q"],
        capture_output=True,
        cwd=ROOT,
        env=env,
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(f"inspector check {target} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    return proc.stdout


def _key(f: dict) -> tuple:
    return (f.get("rule"), f.get("file"), f.get("line"), f.get("seq"), f.get("path"))


def explain(old: bytes, new: bytes, limit: int = 20) -> list[str]:
    """What differs between two reports, one line per difference (at most ``limit`` findings)."""
    a, b = json.loads(old), json.loads(new)
    out = []
    if a.get("summary") != b.get("summary"):
        out.append(f"summary: {a.get('summary')} -> {b.get('summary')}")
    rows = [(i, x, y) for i, (x, y) in enumerate(zip(a.get("sessions", []), b.get("sessions", []))) if x != y]
    for i, x, y in rows[:limit]:
        out.append(f"session row {i}: {x} -> {y}")
    if len(rows) > limit:
        out.append(f"... {len(rows) - limit} more session rows differ")
    fa, fb = a.get("findings", []), b.get("findings", [])
    ka, kb = [json.dumps(f, sort_keys=True) for f in fa], [json.dumps(f, sort_keys=True) for f in fb]
    gone = [f for f, k in zip(fa, ka) if k not in set(kb)]
    came = [f for f, k in zip(fb, kb) if k not in set(ka)]
    by_key = {_key(f): f for f in gone}
    for f in came[:limit]:
        before = by_key.pop(_key(f), None)
        if before is None:
            out.append(f"+ {f['rule']} {f.get('file')}:{f.get('line')} seq {f.get('seq')}: {f.get('message')}")
        else:
            fields = sorted(k for k in set(f) | set(before) if f.get(k) != before.get(k))
            out.append(f"~ {f['rule']} {f.get('file')}:{f.get('line')} seq {f.get('seq')}: changed {', '.join(fields)}")
    for f in list(by_key.values())[:limit]:
        out.append(f"- {f['rule']} {f.get('file')}:{f.get('line')} seq {f.get('seq')}: {f.get('message')}")
    if not out and ka != kb:
        out.append("same findings in a different order")
    if not out:
        out.append("same content, different bytes (formatting)")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", type=Path, metavar="DIR", help="write the current reports here as the reference")
    mode.add_argument("--ref", type=Path, metavar="DIR", help="compare the current reports with the ones saved here")
    ap.add_argument("--only", choices=sorted(TARGETS), help="one target instead of both")
    args = ap.parse_args()
    status = 0
    for name, target in TARGETS.items():
        if args.only and name != args.only:
            continue
        if not (ROOT / target).is_dir():
            print(f"{name}: {target} is absent; skipped")
            continue
        current = report(target)
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"{name}.json").write_bytes(current)
            print(f"{name}: saved {len(current):,} bytes to {args.save / f'{name}.json'}")
            continue
        ref_file = args.ref / f"{name}.json"
        if not ref_file.is_file():
            print(f"{name}: no reference {ref_file}")
            status = max(status, 2)
            continue
        reference = ref_file.read_bytes()
        if current == reference:
            n = len(json.loads(current).get("findings", []))
            print(f"{name}: identical ({n} findings, {len(current):,} bytes)")
            continue
        status = max(status, 1)
        print(f"{name}: DIFFERS from {ref_file}")
        for line in explain(reference, current):
            print(f"  {line}")
    return status


if __name__ == "__main__":
    sys.exit(main())
