"""``inspector check``: the CI gate."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import add_input_flags, check_profile, fail, split_codes

FORMATS = ("text", "json")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="check logs (and captured requests); exit 1 on findings at or above --fail-on",
                       description="Load logs, fold headers, rebuild every request, compare with captures, report findings.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="a log file, a folder of logs, or a sessions root")
    add_input_flags(p)
    p.add_argument("--format", choices=FORMATS, default="text", help="output format (default text)")
    p.add_argument("--output", "-o", metavar="FILE", type=Path, help="write the report here instead of stdout")
    p.add_argument("--select", action="append", metavar="RULES", help="only these rule codes, code prefixes (DIV) or categories; comma-separated")
    p.add_argument("--ignore", action="append", metavar="RULES", help="skip these rule codes, prefixes or categories; comma-separated")
    p.add_argument("--fail-on", choices=("error", "warning", "info"), default="error", help="lowest severity that fails the run (default error)")
    p.add_argument("--verbose", "-v", action="store_true", help="text format: print each finding's detail")


def run(args: argparse.Namespace) -> int:
    from invariants.check import CheckOptions, run_check
    from invariants.findings import SEVERITY_RANK
    from invariants.report import dumps_json, report_json, report_text

    options = CheckOptions(
        captures=args.captures, profile=check_profile(args.profile),
        select=split_codes(args.select), ignore=split_codes(args.ignore) or [],
    )
    result = run_check(args.paths, options)
    for problem in result.problems:
        fail(problem)
    if args.format == "json":
        text = dumps_json(report_json(result), indent=True)
    else:
        text = report_text(result, verbose=args.verbose)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")
    if result.problems:
        return 2
    threshold = SEVERITY_RANK[args.fail_on]
    return 1 if any(SEVERITY_RANK.get(f.severity, 0) >= threshold for f in result.findings) else 0
