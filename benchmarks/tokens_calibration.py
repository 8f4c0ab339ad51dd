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
   The same steps are also measured against the request their usage really
   belongs to: a snapshot test replays model streams (usage included) from a
   fixture recorded earlier, while the header it logs is today's, so each
   corpus session is traced by its usage sequence to the recording it
   replays.  The table says which header change (system prompt, tool list)
   makes the corpus log's own request larger.
3. Held out: the fit is repeated on every other recording and measured on
   the rest (and the other way round).
4. The hint rule's tolerance needs the largest step-to-step departure on
   accepted logs (printed); its precision and recall are
   ``benchmarks/tokens_hints.py``.

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
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from invariants.analysis.token_rules import HINT_TOLERANCE  # noqa: E402
from invariants.analysis.token_steps import step_tokens, usage_kind  # noqa: E402
from invariants.analysis.tokens import Calibration, TokenCounter  # noqa: E402
from invariants.analysis.wire import wire_messages, wire_tools  # noqa: E402
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


def _fit_coefs(names: list[str], rows: dict, points: dict) -> list[float]:
    """[request, per_tool, per_message, per_call] fitted on these recordings: request and per_tool on the line of
    their first steps, per_message and per_call on every step's residual."""
    a, b = _solve([[1.0, points[k][0]] for k in names], [points[k][1] for k in names])
    kept = [r for k in names for r in rows[k]]
    m, c = _solve([f[1][2:] for _, f, _ in kept], [y - f[0] - a - b * f[1][1] for _, f, y in kept])
    return [a, b, m, c]


def _count(coef: list[float], f: tuple[float, list[float]]) -> float:
    return f[0] + sum(c * x for c, x in zip(coef, f[1]))


def _errors(coef: list[float], names: list[str], rows: dict) -> list[float]:
    return [abs(_count(coef, f) - y) / y * 100 for k in names for _, f, y in rows[k]]


def fit(gitdir: Path) -> tuple[Calibration, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        rows: dict[str, list] = defaultdict(list)
        headers: dict[str, tuple[str, list]] = {}  # recording -> (system, tools) of its first counted request
        for path in harness_recordings(gitdir, Path(tmp)):
            model = replay(discover([path])[0][0])
            for st in model.steps:
                u = st.usage or {}
                if not isinstance(u.get("inputTokens"), int) or not isinstance(u.get("cacheReadTokens"), int):
                    continue
                f = _features(model, st)
                if f is not None and f[1][0]:
                    rows[path.name].append((st.index, f, u["inputTokens"] + u["cacheReadTokens"]))
                    if path.name not in headers:
                        req = model.rebuild_request(st).request
                        headers[path.name] = (req.get("system") or "", req.get("tools") or [])
    # First steps lie on one line, residual = request + per_tool * tools, when the recording carries the
    # header it was made with; a header edited later without re-recording puts its version off the line.
    # The line with the most versions within 15 tokens of it is found by trying every pair (RANSAC, exhaustive);
    # header-only edits (a tool added to the pin, the old usage kept) line up on a negative slope, refused here.
    firsts = {k: min(v)[1:] for k, v in rows.items()}
    points = {k: (f[1][1], y - f[0] - f[1][2] * 3) for k, (f, y) in firsts.items()}  # 3 per message: a first guess
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
    keep = sorted(best)
    coef = _fit_coefs(keep, rows, points)
    cal = Calibration(*(round(x, 1) for x in coef))
    errs = _errors(coef, keep, rows)
    # Held out: fit on every other recording, measure on the rest, and the other way round.
    halves = (keep[0::2], keep[1::2])
    held = _errors(_fit_coefs(halves[0], rows, points), halves[1], rows) + _errors(
        _fit_coefs(halves[1], rows, points), halves[0], rows
    )
    # The request each usage sequence was recorded with: per step our count, keyed by the usage totals.
    recorded = {}
    for k in keep:
        steps = sorted(rows[k])
        recorded[tuple(y for _, _, y in steps)] = (k, [_count(coef, f) for _, f, _ in steps], headers[k])
    return cal, {
        "recorded": recorded,
        "versions": len(rows),
        "kept": len(keep),
        "steps": sum(len(rows[k]) for k in keep),
        "median": statistics.median(errs),
        "p95": _pct(errs, 0.95),
        "held_median": statistics.median(held),
        "held_p95": _pct(held, 0.95),
        "held_steps": len(held),
    }


def _growths(counts: list[float], provider: list[int]) -> list[float]:
    """Error of each step-to-step growth in % of the provider's growth (steps where the provider's count grew)."""
    out = []
    for (oa, pa), (ob, pb) in zip(zip(counts, provider), zip(counts[1:], provider[1:])):
        if pb > pa:
            out.append(abs((ob - oa) - (pb - pa)) / (pb - pa) * 100)
    return out


def _header_delta(now: tuple[str, Any], then: tuple[str, Any]) -> tuple[int, int, tuple, tuple]:
    """(system tokens, tool tokens, tools added, tools removed) of the logged header against the recorded one."""
    counter = TokenCounter()
    names_now = {t.name for t in wire_tools(now[1])}
    names_then = {t.name for t in wire_tools(then[1])}
    system = counter.request({"system": now[0]}).total - counter.request({"system": then[0]}).total
    tools = round(counter.tools(now[1]) - counter.tools(then[1]))
    return system, tools, tuple(sorted(names_now - names_then)), tuple(sorted(names_then - names_now))


def corpus_table(corpus: Path, recorded: dict | None = None) -> dict:
    roots = [corpus / "upstream-seed-era", corpus / "upstream-late-era"]
    sources, _ = discover([p for r in roots for p in sorted(r.iterdir()) if "snapshot" in p.name])
    absolute, growth, bytes4, growth4, departures = [], [], [], [], []
    traced_abs, traced_growth = [], []  # against the recorded request the usage belongs to
    groups: dict[tuple, list] = defaultdict(list)  # (era, tools added, tools removed) -> [(tokens more, system, tools)]
    untraced = []
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
        usage = tuple(s.provider for s in counted)
        era = src.path.parent.parent.name
        trace = next((v for k, v in (recorded or {}).items() if k[: len(usage)] == usage or usage[: len(k)] == k), None)
        if trace is None:
            first = counted[0]
            untraced.append((era, src.path.parent.name, first.tokens.total - first.provider, len(counted)))
            continue
        _, counts, header = trace
        n = min(len(counts), len(usage))
        traced_abs += [abs(c - p) / p * 100 for c, p in zip(counts[:n], usage[:n])]
        traced_growth += _growths(counts[:n], list(usage[:n]))
        exp = model.rebuild_request(model.steps[counted[0].index], counted[0].dispatch).request
        system, tools, added, removed = _header_delta((exp.get("system") or "", exp.get("tools")), header)
        groups[(era, added, removed)].append((counted[0].tokens.total - counts[0], system, tools))
    return {
        "sessions": sessions,
        "steps": len(absolute),
        "absolute": absolute,
        "growth": growth,
        "growth_steps": len(growth),
        "bytes4": bytes4,
        "growth4": growth4,
        "max_departure": max(departures),
        "traced_abs": traced_abs,
        "traced_growth": traced_growth,
        "groups": dict(groups),
        "untraced": untraced,
    }


def _row(label: str, steps: int, absolute: list[float] | None, growth: list[float]) -> str:
    a = f"{statistics.median(absolute):6.2f} % {_pct(absolute, 0.95):6.2f} %" if absolute else f"{'-':>8} {'-':>8}"
    g = f"{statistics.median(growth):6.1f} % {_pct(growth, 0.95):6.1f} %" if growth else f"{'-':>8} {'-':>8}"
    return f"| {label:<58} | {steps:>5} | {a} | {g} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harness", type=Path, default=Path("/work/.mirror/toninfo+deepseek-harness/repo"))
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    args = ap.parse_args()
    stats: dict = {}
    if args.harness.exists():
        cal, stats = fit(args.harness)
        print(f"fit on the harness's recordings: {cal}")
        print(f"  {stats['versions']} recordings, {stats['kept']} with their own header, {stats['steps']} steps")
    t = corpus_table(args.corpus, stats.get("recorded"))
    print()
    print(f"| {'what is compared (input + cacheRead)':<58} | steps | abs median    p95 | growth med    p95 |")
    print(f"| {'-' * 58} | ----: | -----------------: | ----------------: |")
    if stats:
        print(
            f"| {'harness recordings, fitted on all':<58} | {stats['steps']:>5} | "
            f"{stats['median']:6.2f} % {stats['p95']:6.2f} % | {'-':>8} {'-':>8} |"
        )
        print(
            f"| {'harness recordings, held out (fit on the other half)':<58} | {stats['held_steps']:>5} | "
            f"{stats['held_median']:6.2f} % {stats['held_p95']:6.2f} % | {'-':>8} {'-':>8} |"
        )
        traced = len(t["traced_abs"])
        print(
            _row("corpus steps, against the recording their usage replays", traced, t["traced_abs"], t["traced_growth"])
        )
    print(_row("corpus steps, against the corpus log's own request", t["steps"], t["absolute"], t["growth"]))
    print(_row("corpus steps, bytes/4 of the logged request JSON", t["steps"], t["bytes4"], t["growth4"]))
    print()
    print(f"corpus: {t['steps']} real-usage steps in {t['sessions']} sessions; {t['growth_steps']} growths")
    print(
        f"largest step-to-step departure on an accepted log: {t['max_departure'][0]} tokens on "
        f"{t['max_departure'][1]} new ({t['max_departure'][2]}); tolerance in force: {HINT_TOLERANCE}"
    )
    print("why the corpus log's own request is off: its usage was replayed from an older recording")
    for (era, added, removed), rows in sorted(t["groups"].items()):
        more = [r[0] for r in rows]
        system = statistics.median(r[1] for r in rows)
        tools = statistics.median(r[2] for r in rows)
        change = ", ".join([*(f"+{n}" for n in added), *(f"-{n}" for n in removed)]) or "same tool names"
        print(
            f"  {era}: {len(rows)} sessions log a request larger by a median {statistics.median(more):.0f} tokens "
            f"(min {min(more):.0f}, max {max(more):.0f}): system prompt {system:+.0f}, tool schemas {tools:+.0f} "
            f"({change})"
        )
    for era, folder, off, n in t["untraced"]:
        print(f"  {era}/{folder}: no unscrubbed recording carries its usage ({n} steps; first step off by {off:+d})")


if __name__ == "__main__":
    main()
