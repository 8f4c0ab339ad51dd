"""Fit the token overheads and measure them: the tables of invariants/analysis/tokens.py and token_rules.py.

1. Ground truth: the harness's own snapshot recordings (every version of
   ``examples/*/tests/snapshots/*/session*.jsonl`` in its git history whose
   header is not scrubbed and whose usage is a provider's), replayed with our
   reader.  A recording whose header was edited later without re-recording
   (its usage no longer belongs to its request) shows a first-step residual
   off the common line; only the versions on it are kept.  The overheads are
   fitted there by least squares.
2. The corpus: every step with real usage (``usage_kind == "real"``) in
   ``../shared/corpus``: absolute error against ``inputTokens + cacheReadTokens``
   and error of the step-to-step growth.
3. The hint: the largest step-to-step departure on accepted logs, and
   precision/recall on injected faults (a tool result's text dropped,
   lengthened, or a duplicated user message).

    python benchmarks/tokens_calibration.py [--harness GITDIR] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from invariants.analysis.token_rules import HINT_TOLERANCE, hint_findings  # noqa: E402
from invariants.analysis.token_steps import step_tokens, usage_kind  # noqa: E402
from invariants.analysis.tokens import Calibration, TokenCounter  # noqa: E402
from invariants.read.discover import discover  # noqa: E402
from invariants.replay.session import replay  # noqa: E402

ZERO = Calibration(0, 0, 0, 0)


def _features(model, st) -> tuple[float, list[float]] | None:
    """(text tokens, [request, tools, messages, calls]) of a step's request, counted with no overheads."""
    exp = model.rebuild_request(st)
    if exp is None:
        return None
    counter = model.__dict__.setdefault("_zero_counter", TokenCounter(ZERO))
    req = exp.request
    text = counter.request(req).total
    from invariants.analysis.wire import wire_messages, wire_tools

    wires = [w for m in req.get("messages") or () for w in wire_messages(m)]
    tools = wire_tools(req.get("tools"))
    return text, [1.0 if tools else 0.0, len(tools), len(wires), sum(len(w.calls) for w in wires)]


def _solve(xs: list[list[float]], ys: list[float]) -> list[float]:
    """Least squares by the normal equations (a handful of unknowns)."""
    k = len(xs[0])
    a = [[sum(x[i] * x[j] for x in xs) for j in range(k)] + [sum(x[i] * y for x, y in zip(xs, ys))] for i in range(k)]
    for c in range(k):
        p = max(range(c, k), key=lambda r: abs(a[r][c]))
        a[c], a[p] = a[p], a[c]
        for r in range(k):
            if r != c and a[c][c]:
                f = a[r][c] / a[c][c]
                a[r] = [v - f * w for v, w in zip(a[r], a[c])]
    return [a[i][k] / a[i][i] if a[i][i] else 0.0 for i in range(k)]


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else float("nan")


def harness_recordings(gitdir: Path, out: Path) -> list[Path]:
    listing = subprocess.run(
        ["git", "-C", str(gitdir), "rev-list", "--objects", "--all", "--", "examples/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    blobs = sorted(
        {
            sha
            for sha, _, path in (line.partition(" ") for line in listing.splitlines())
            if "/tests/snapshots/" in path and Path(path).name.startswith("session") and path.endswith(".jsonl")
        }
    )
    paths = []
    for sha in blobs:
        data = subprocess.run(["git", "-C", str(gitdir), "cat-file", "blob", sha], capture_output=True).stdout
        if b'"cacheReadTokens"' not in data or b'"request/header"' not in data or b"{{system}}" in data:
            continue
        p = out / f"{sha}.jsonl"
        p.write_bytes(data)
        paths.append(p)
    return paths


def fit(gitdir: Path) -> tuple[Calibration, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        rows: dict[str, list] = defaultdict(list)
        for path in harness_recordings(gitdir, Path(tmp)):
            model = replay(discover([path])[0][0])
            for st in model.steps:
                u = st.usage or {}
                if not isinstance(u.get("inputTokens"), int) or not isinstance(u.get("cacheReadTokens"), int):
                    continue
                f = _features(model, st)
                if f is not None and f[1][0]:
                    rows[path.name].append((st.index, f, u["inputTokens"] + u["cacheReadTokens"]))
    # First steps lie on one line, residual = request + per_tool * tools, when the recording carries the
    # header it was made with; a header edited later without re-recording puts its version off the line.
    # The line with the most versions within 15 tokens of it is found by trying every pair (RANSAC, exhaustive);
    # header-only edits (a tool added to the pin, the old usage kept) line up on a negative slope, refused here.
    firsts = {k: min(v)[1:] for k, v in rows.items()}
    points = {k: (f[1][1], y - f[0] - f[1][2] * 3) for k, (f, y) in firsts.items()}
    best: list[str] = []
    for a in points.values():
        for b in points.values():
            if a[0] == b[0]:
                continue
            slope = (b[1] - a[1]) / (b[0] - a[0])
            if not 0 <= slope <= 50:  # a tool schema costs the template a few tokens, never fewer than none
                continue
            near = [k for k, (n, r) in points.items() if abs(r - a[1] - slope * (n - a[0])) < 15]
            if len(near) > len(best):
                best = near
    keep = best
    kept = [r for k in keep for r in rows[k]]
    # request and per_tool from the line of first steps; per_message and per_call from every kept step.
    a, b = _solve(
        [[1.0, points[k][0]] for k in keep], [points[k][1] for k in keep]
    )  # 3 per message assumed here, refitted below
    m, c = _solve([f[1][2:] for _, f, _ in kept], [y - f[0] - a - b * f[1][1] for _, f, y in kept])
    coef = [a, b, m, c]
    cal = Calibration(*(round(x, 1) for x in coef))
    errs = [abs(f[0] + sum(c * x for c, x in zip(coef, f[1])) - y) / y * 100 for _, f, y in kept]
    # The request each usage sequence was recorded with: its first step's count, keyed by the usage totals.
    recorded = {}
    for k in keep:
        steps = sorted(rows[k])
        _, f, _ = steps[0]
        recorded[tuple(y for _, _, y in steps)] = f[0] + sum(c * x for c, x in zip(coef, f[1]))
    return cal, {
        "recorded": recorded,
        "versions": len(rows),
        "kept": len(keep),
        "steps": len(kept),
        "median": statistics.median(errs),
        "p95": _pct(errs, 0.95),
    }


def corpus_table(corpus: Path, recorded: dict | None = None) -> dict:
    roots = [corpus / "upstream-seed-era", corpus / "upstream-late-era"]
    sources, _ = discover([p for r in roots for p in sorted(r.iterdir()) if "snapshot" in p.name])
    absolute, growth, bytes4, growth4, departures = [], [], [], [], []
    outliers = []
    matched: list[tuple[float, float]] = []  # (our count of the log's request - of the recorded one, error there)
    sessions = 0
    for src in sources:
        model = replay(src)
        steps = step_tokens(model)
        if usage_kind(model, steps) != "real":
            continue
        sessions += 1
        counted = [s for s in steps if s.provider is not None]
        for s in counted:
            absolute.append(abs(s.tokens.total - s.provider) / s.provider * 100)
            exp = model.rebuild_request(model.steps[s.index], s.dispatch)
            bytes4.append(abs(len(orjson.dumps(exp.request)) / 4 - s.provider) / s.provider * 100)
        for a, b in zip(counted, counted[1:]):
            if model.steps[a.index].instance != model.steps[b.index].instance:
                continue
            gp = b.provider - a.provider
            if gp <= 0:
                continue
            go = b.tokens.total - a.tokens.total
            growth.append(abs(go - gp) / gp * 100)
            ea = len(orjson.dumps(model.rebuild_request(model.steps[a.index], a.dispatch).request))
            eb = len(orjson.dumps(model.rebuild_request(model.steps[b.index], b.dispatch).request))
            growth4.append(abs((eb - ea) / 4 - gp) / gp * 100)
            departures.append((abs(go - gp), go, src.display))
        worst = max(counted, key=lambda s: abs(s.tokens.total - s.provider))
        if abs(worst.tokens.total - worst.provider) > 0.1 * worst.provider:
            outliers.append((src.display, worst.provider, worst.tokens.total))
        usage = tuple(s.provider for s in counted)
        for key, first in (recorded or {}).items():
            if key[: len(usage)] == usage or usage[: len(key)] == key:
                matched.append(
                    (counted[0].tokens.total - first, abs(first - counted[0].provider) / counted[0].provider)
                )
                break
    return {
        "sessions": sessions,
        "steps": len(absolute),
        "abs_median": statistics.median(absolute),
        "abs_p95": _pct(absolute, 0.95),
        "growth_median": statistics.median(growth),
        "growth_p95": _pct(growth, 0.95),
        "bytes4_abs_median": statistics.median(bytes4),
        "bytes4_growth_median": statistics.median(growth4),
        "max_departure": max(departures),
        "outliers": outliers,
        "matched": matched,
    }


SIZES = (25, 50, 100, 200)  # words (one token each) added to or removed from a message


def _usages(obj: dict) -> list[dict]:
    d = obj.get("data") if isinstance(obj.get("data"), dict) else {}
    chunk = d.get("chunk") if isinstance(d.get("chunk"), dict) else {}
    return [u for u in (d.get("usage"), chunk.get("usage")) if isinstance(u, dict)]


def _faults(objs: list[dict]):
    """(kind, transform) for each tool result that a later request carries, n tokens off either way."""
    last_step_start = max((o["seq"] for o in objs if o["type"] == "step/start"), default=-1)
    for o in objs:
        d = o.get("data")
        if o["seq"] >= last_step_start or o["type"] != "tool/result" or not isinstance(d, dict) or not d.get("content"):
            continue
        for n in SIZES:
            yield f"alter: the log's tool result has {n:>3} tokens more than was sent", _grow(o["seq"], n)
            yield f"drop:  {n:>3} tokens were sent that the log lacks", _sent(o["seq"], n)


def _grow(seq: int, n: int):
    def apply(objs: list[dict]) -> None:
        for o in objs:
            if o["seq"] == seq:
                o["data"]["content"][0]["text"] += " word" * n

    return apply


def _sent(seq: int, n: int):
    def apply(objs: list[dict]) -> None:
        for o in objs:
            if o["seq"] > seq:
                for u in _usages(o):
                    if isinstance(u.get("inputTokens"), int):
                        u["inputTokens"] += n

    return apply


def fault_table(corpus: Path) -> dict:
    roots = [corpus / "upstream-seed-era", corpus / "upstream-late-era"]
    sources, _ = discover([p for r in roots for p in sorted(r.iterdir()) if "snapshot" in p.name])
    clean_hints = 0
    results: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # kind -> [fired, injected]
    with tempfile.TemporaryDirectory() as tmp:
        for src in sources:
            model = replay(src)
            if usage_kind(model) != "real" or src.path.name.endswith(".zstd"):
                continue
            clean_hints += len(hint_findings(model, step_tokens(model)))
            raw = src.path.read_bytes().splitlines()
            for kind, apply in _faults([orjson.loads(x) for x in raw[1:]]):
                objs = [orjson.loads(x) for x in raw[1:]]
                apply(objs)
                dst = Path(tmp) / src.path.name
                dst.write_bytes(b"\n".join([raw[0], *map(orjson.dumps, objs)]) + b"\n")
                faulty = replay(discover([dst])[0][0])
                results[kind][1] += 1
                results[kind][0] += bool(hint_findings(faulty, step_tokens(faulty)))
    return {"hints_on_accepted": clean_hints, "recall": dict(results)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harness", type=Path, default=Path("/work/.mirror/toninfo+deepseek-harness/repo"))
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    args = ap.parse_args()
    stats: dict = {}
    if args.harness.exists():
        cal, stats = fit(args.harness)
        print(f"fit on the harness's recordings: {cal}")
        print(
            f"  {stats['versions']} recordings, {stats['kept']} with their own header, {stats['steps']} steps: "
            f"median error {stats['median']:.2f} %, p95 {stats['p95']:.2f} %"
        )
    t = corpus_table(args.corpus, stats.get("recorded"))
    print(f"corpus, real usage: {t['steps']} steps in {t['sessions']} sessions")
    print(
        f"  ours:    absolute error median {t['abs_median']:.1f} %, p95 {t['abs_p95']:.1f} %; "
        f"growth error median {t['growth_median']:.1f} %, p95 {t['growth_p95']:.1f} %"
    )
    print(
        f"  bytes/4: absolute error median {t['bytes4_abs_median']:.1f} %; "
        f"growth error median {t['bytes4_growth_median']:.1f} %"
    )
    print(
        f"  largest step-to-step departure: {t['max_departure'][0]} tokens on {t['max_departure'][1]} new "
        f"({t['max_departure'][2]})"
    )
    print(f"  tolerance in force: {HINT_TOLERANCE}")
    print(f"  {len(t['outliers'])} session(s) off by more than 10 %")
    if t["matched"]:
        grown = [g for g, _ in t["matched"]]
        err = [100 * e for _, e in t["matched"]]
        print(
            f"  {len(t['matched'])} of {t['sessions']} sessions match a harness recording by their usage: the log's "
            f"first request is larger than the recorded one by a median {statistics.median(grown):.0f} tokens "
            f"(min {min(grown):.0f}, max {max(grown):.0f}); against the recorded request the error is a median "
            f"{statistics.median(err):.2f} % (p95 {_pct(err, 0.95):.2f} %)"
        )
    for path, prov, ours in t["outliers"]:
        print(f"  outlier: {path}: provider {prov}, ours {ours}")
    f = fault_table(args.corpus)
    print(f"hints on accepted real-usage logs: {f['hints_on_accepted']}")
    for kind, (fired, n) in sorted(f["recall"].items()):
        print(f"  {kind}: fired on {fired} of {n} ({100 * fired / n:.0f} %)")


if __name__ == "__main__":
    main()
