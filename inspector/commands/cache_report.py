"""``inspector cache-report PATH``: why did the prompt cache miss?

For each step: the rebuilt request's size, how much of it is a
byte-identical prefix of the previous step's request (render order: model,
system, tools, messages), what broke the prefix, and the provider's own
cache reads over the prompt it counted beside it (the harness's usage is
disjoint: ``inputTokens`` excludes cache reads, so the prompt is
``inputTokens + cacheReadTokens``); per session, the tokens re-paid.  Token counts are estimates (bytes/4).  See
``invariants/cache_report.py`` for the breaker classes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import add_config_flags, add_input_flags, check_profile, fail, load_configuration


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
    add_config_flags(p)
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


def _usage_cell(usage: dict | None, prompt: tuple[int, int] | None) -> str:
    """``cacheRead/prompt (hit%)``; a usage without an integer ``inputTokens`` shows its raw values inert."""
    if prompt is not None:
        read, total = prompt
        return f"{read:,}/{total:,}" + (f" ({round(100 * read / total)}%)" if total else "")
    if usage:
        return f"{_n(usage.get('cacheReadTokens'))}/{_n(usage.get('inputTokens'))}?"
    return "-"


def session_text(sc, breaks_only: bool = False) -> list[str]:
    from invariants.analysis.cache_report import est_tokens, provider_prompt
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
        f"  {'step':>4}  {'turn.step':<9} {'seq':>6} {head:>9} {'reused':>7} {'~re-paid':>9} "
        f"{'cacheRead/prompt':>22}  breaker"
    )
    for k, st in enumerate(sc.steps):
        if breaks_only and st.breaker is None:
            continue
        usage = _usage_cell(st.usage, provider_prompt(st.usage))
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
            f"{_n(est_tokens(st.repaid_bytes)):>9} {usage:>22}  {why}"
        )
    bk = ", ".join(f"{k} {v}" for k, v in s["breakers"].items()) or "none"
    sent = f"{_n(s['tokens'])} tokens sent" if s["tokens"] is not None else f"~{_n(s['tokens_est'])} tokens sent"
    tail = (
        f"  summary: {sent}, ~{_n(s['reused_tokens_est'])} reusable prefix"
        + (f" ({round(100 * s['reuse_ratio'])}%)" if s["reuse_ratio"] is not None else "")
        + f", ~{_n(s['repaid_tokens_est'])} re-paid; breakers: {bk}"
    )
    if s["usage_steps"]:
        tail += (
            f"; provider usage: {_n(s['cache_read_tokens'])} of {_n(s['prompt_tokens'])} prompt tokens read from cache"
        )
        if s["cache_read_ratio"] is not None:
            tail += f" ({round(100 * s['cache_read_ratio'])}%)"
        tail += f", {_n(s['input_tokens'])} uncached"
    lines.append(tail)
    return lines


def run(args: argparse.Namespace) -> int:
    from invariants.analysis.cache_report import BYTES_PER_TOKEN, est_tokens, report_document, session_cache
    from invariants.analysis.tokenizer import NAME, available
    from invariants.gate.config import ConfigError
    from invariants.gate.report import dumps_json
    from invariants.gate.result import CheckOptions
    from invariants.gate.unit import replay_source
    from invariants.read.discover import discover

    try:
        config = load_configuration(args)
    except ConfigError as exc:
        return fail(str(exc))
    options = CheckOptions(profile=check_profile(args.profile if args.profile is not None else config.profile))
    sources, problems = discover(args.paths)
    for p in problems:
        fail(p)
    count = available()
    reports = []
    for src in sources:
        model = replay_source(src, options)
        if isinstance(model, str):
            problems.append(model)
            fail(model)
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
            f"{len(reports)} session(s); ~{_n(est_tokens(total))} tokens re-paid in all. "
            + (
                f"'tokens' is each request counted with the {NAME} as the provider receives it; re-paid tokens "
                f"are estimated as bytes/{BYTES_PER_TOKEN}"
                if count
                else f"Tokens are estimated as bytes/{BYTES_PER_TOKEN} (install the 'tokens' extra for real counts)"
            )
            + "; 'reused' is the byte-identical prefix shared with the previous step's request "
            "(render order model, system, tools, messages); 'cacheRead/prompt' is the provider's count of cached "
            "prompt tokens over its whole prompt (inputTokens + cacheReadTokens)."
        )
        text = "\n".join(lines)
    if args.output:
        from invariants.model.atomic import write_atomic, write_error

        try:
            write_atomic(args.output, text + "\n")
        except OSError as exc:
            return fail(write_error(args.output, "report", exc))
    else:
        sys.stdout.write(text + "\n")
    return 2 if problems else 0
