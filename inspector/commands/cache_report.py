"""``inspector cache-report PATH``: why did the prompt cache miss?

For each step: the rebuilt request's size, how much of it is a
byte-identical prefix of the previous step's request (render order: model,
system, tools, messages), what broke the prefix, and the provider's own
``cacheReadTokens`` / ``inputTokens`` beside it; per session, the tokens
re-paid.  Token counts are estimates (bytes/4).  See
``invariants/cache_report.py`` for the breaker classes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import add_input_flags, check_profile, fail


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cache-report",
        help="per step: reusable request prefix, what broke it, provider cache usage",
        description="Rebuild every request from the log and measure, step by step, how much of it is a "
        "byte-identical prefix of the previous request (render order model, system, tools, messages), "
        "what broke the prefix (system, tools, config, prefix drift, compaction, key order, a volatile value), "
        "and the provider's cacheReadTokens beside it. Tokens are estimated as bytes/4.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a log file, a folder of logs, or a sessions root")
    add_input_flags(p)
    p.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json")
    p.add_argument("--output", "-o", metavar="FILE", type=Path, help="write the report here instead of stdout")
    p.add_argument("--session", metavar="ID", action="append", help="only this session (repeatable)")
    p.add_argument("--breaks-only", action="store_true", help="text: list only the steps whose prefix broke")


def _n(x: int | None) -> str:
    """A count for the table; a usage value the log wrote as something else is shown inert, not formatted."""
    if x is None:
        return "-"
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return f"{x:,}"
    from invariants.model.inert import inert
    from invariants.model.jsonvalue import shorten

    return inert(shorten(x, 24))


def session_text(sc, breaks_only: bool = False) -> list[str]:
    from invariants.analysis.cache_report import est_tokens
    from invariants.model.inert import inert

    counted = all(st.tokens is not None for st in sc.steps)
    head = "tokens" if counted else "~tokens"

    s = sc.summary()
    lines = [
        f"{inert(sc.file)}  (session {inert(sc.session)}, {sc.profile}, {s['steps']} step(s) with a request"
        + (f", {sc.skipped} without a header" if sc.skipped else "")
        + ")"
    ]
    lines.append(
        f"  {'step':>4}  {'turn.step':<9} {'seq':>6} {head:>9} {'reused':>7} {'~re-paid':>9} {'cacheRead/input':>17}  breaker"
    )
    for k, st in enumerate(sc.steps):
        if breaks_only and st.breaker is None:
            continue
        u = st.usage or {}
        usage = f"{_n(u.get('cacheReadTokens'))}/{_n(u.get('inputTokens'))}" if u else "-"
        ratio = f"{round(100 * st.reused_bytes / st.bytes)}%" if st.bytes else "-"
        if k == 0:
            why = "(first request)"
        elif st.breaker is None:
            why = ""
        else:
            why = f"{st.breaker['kind']}: {inert(str(st.breaker.get('detail', '')))}"
        if st.config_changes:
            why += ("; " if why else "") + f"config {', '.join(st.config_changes)} changed (not in the prefix)"
        ts = f"{st.turn}.{st.step}"
        size = st.tokens if counted else est_tokens(st.bytes)
        lines.append(
            f"  {st.index + 1:>4}  {inert(ts):<9} {st.seq:>6} {_n(size):>9} {ratio:>7} "
            f"{_n(est_tokens(st.repaid_bytes)):>9} {usage:>17}  {why}"
        )
    bk = ", ".join(f"{k} {v}" for k, v in s["breakers"].items()) or "none"
    sent = f"{_n(s['tokens'])} tokens sent" if s["tokens"] is not None else f"~{_n(s['tokens_est'])} tokens sent"
    tail = (
        f"  summary: {sent}, ~{_n(s['reused_tokens_est'])} reusable prefix"
        + (f" ({round(100 * s['reuse_ratio'])}%)" if s["reuse_ratio"] is not None else "")
        + f", ~{_n(s['repaid_tokens_est'])} re-paid; breakers: {bk}"
    )
    if s["usage_steps"]:
        tail += f"; provider usage: {_n(s['cache_read_tokens'])} cacheRead of {_n(s['input_tokens'])} input"
        if s["cache_read_ratio"] is not None:
            tail += f" ({round(100 * s['cache_read_ratio'])}%)"
    lines.append(tail)
    return lines


def run(args: argparse.Namespace) -> int:
    from invariants.analysis.cache_report import BYTES_PER_TOKEN, report_document, session_cache
    from invariants.analysis.tokenizer import NAME, available
    from invariants.gate.report import dumps_json
    from invariants.read.discover import discover
    from invariants.replay.session import replay

    profile = check_profile(args.profile)
    sources, problems = discover(args.paths)
    for p in problems:
        fail(p)
    count = available()
    reports = []
    for src in sources:
        try:
            model = replay(src, profile)
        except OSError as exc:
            problems.append(f"{src.display}: cannot read ({exc.strerror or exc})")
            fail(problems[-1])
            continue
        if args.session and model.id not in args.session:
            continue
        reports.append(session_cache(model, count_tokens=count))
    if args.format == "json":
        text = dumps_json(report_document(reports, NAME if count else None), indent=True)
    else:
        lines: list[str] = []
        for r in reports:
            lines += session_text(r, args.breaks_only) + [""]
        total = sum(r.summary()["repaid_bytes"] for r in reports)
        lines.append(
            f"{len(reports)} session(s); ~{_n((total + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN)} tokens re-paid in all. "
            + (
                f"'tokens' is each request counted with the {NAME} as the provider receives it; re-paid tokens "
                f"are estimated as bytes/{BYTES_PER_TOKEN}"
                if count
                else f"Tokens are estimated as bytes/{BYTES_PER_TOKEN} (install the 'tokens' extra for real counts)"
            )
            + "; 'reused' is the byte-identical prefix shared with the previous step's request "
            "(render order model, system, tools, messages)."
        )
        text = "\n".join(lines)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")
    return 2 if problems else 0
