"""``inspector check``: the CI gate.

Exit codes: 0 clean, 1 findings at or above ``--fail-on`` (0 with
``--exit-zero``), 2 usage error or unreadable input.  The report goes to
stdout (or ``--output``); for machine formats the one-line summary goes to
stderr, so stdout stays parseable.  Settings come from the command line,
then ``inspector.toml`` / ``[tool.inspector]`` (see ``invariants/gate/config.py``),
then defaults.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from contextlib import ExitStack, closing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from invariants.model.inert import inert

from .common import add_config_flags, add_input_flags, fail, missing_captures, split_codes

if TYPE_CHECKING:
    from invariants.analysis.token_rules import TokenSettings

FORMATS = ("text", "json", "jsonl", "junit", "sarif", "github", "gitlab", "concise")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="check logs (and captured requests); exit 1 on findings at or above --fail-on",
        description="Load logs, fold headers, rebuild every request, compare with captures, report findings. "
        "Settings also come from inspector.toml or [tool.inspector] in pyproject.toml; flags win.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a log file, a folder of logs, or a sessions root")
    add_input_flags(p)
    p.add_argument(
        "--tokens",
        action="store_true",
        default=None,
        help="count every rebuilt request with the DeepSeek V4 tokenizer and run the token rules "
        "(TOK001 hints, CTX001-004 context pressure); needs the tokens extra",
    )
    p.add_argument(
        "--context-window",
        type=int,
        metavar="N",
        help="with --tokens: the model's window for requests whose log names none (request/context)",
    )
    p.add_argument(
        "--allow-empty",
        action="store_true",
        help="a PATH folder with no session logs is not an error (default: exit 2, `no session logs under PATH`)",
    )
    p.add_argument(
        "--watch",
        action="store_true",
        help="check again whenever a log or capture changes (a grown log is resumed), printing only new findings; "
        "Ctrl-C stops with the summary and the exit code of a check of the logs as they are then",
    )
    out = p.add_argument_group("output")
    out.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="text (default), json (report version 1), jsonl (one finding per line), "
        "junit (JUnit XML, pytest's xunit2 shape: one test case per session), sarif (SARIF 2.1.0), "
        "github (workflow annotations), gitlab (GitLab Code Quality JSON), "
        "concise (path:line:col: CODE message, one line per finding)",
    )
    out.add_argument(
        "--project-root",
        metavar="DIR",
        type=Path,
        help="sarif and gitlab paths are relative to DIR (default: the git repository around the working "
        "directory, else the configuration file's folder, else the working directory)",
    )
    out.add_argument("--output", "-o", metavar="FILE", type=Path, help="write the report here instead of stdout")
    out.add_argument("--statistics", action="store_true", help="count findings per rule (text: instead of the listing)")
    out.add_argument("--verbose", "-v", action="store_true", help="text format: print each finding's detail")
    out.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
    sel = p.add_argument_group("rules")
    sel.add_argument(
        "--select",
        action="append",
        metavar="RULES",
        help="only these rule codes, code prefixes (DIV) or categories; comma-separated",
    )
    sel.add_argument(
        "--ignore",
        action="append",
        metavar="RULES",
        help="skip these rule codes, prefixes or categories; comma-separated",
    )
    sel.add_argument(
        "--severity",
        action="append",
        metavar="RULE=LEVEL",
        help="override a rule's (or category's) severity, e.g. PFX002=error; comma-separated, repeatable",
    )
    sel.add_argument(
        "--fail-on",
        choices=("error", "warning", "info"),
        default=None,
        help="lowest severity that fails the run (default error)",
    )
    sel.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when findings reach --fail-on (unreadable input still exits 2)",
    )
    add_config_flags(p)
    base = p.add_argument_group("baseline")
    base.add_argument(
        "--baseline",
        metavar="FILE",
        help="report only findings that are not in this baseline; list its entries that no longer occur",
    )
    base.add_argument("--write-baseline", metavar="FILE", help="record the current findings as the baseline and exit 0")
    base.add_argument(
        "--ledger",
        metavar="FILE",
        help="log ledger: verify that each log still begins with what a previous check recorded (RSM001), "
        "then record it",
    )
    run_ = p.add_argument_group("speed")
    run_.add_argument(
        "--jobs",
        "-j",
        type=int,
        metavar="N",
        default=None,
        help="check folders in N processes (0 = one per usable CPU; default: one per usable CPU, or this "
        "process alone for a run under 32 MB, where processes cost more than they save; -v says which). "
        "Usable: an affinity mask (taskset) or a container's CPU quota counts, not only the machine's CPUs",
    )
    run_.add_argument(
        "--scheduler",
        metavar="ADDR",
        default=None,
        help="check folders on a Dask cluster: tcp://HOST:PORT, or local[:N] to start N local worker processes "
        "(needs the fleet extra; overrides --jobs)",
    )
    run_.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")
    run_.add_argument(
        "--cache-dir", metavar="DIR", help="result cache folder (default .inspector_cache in the working directory)"
    )


def _severity_flags(values: list[str] | None) -> dict[str, str]:
    from invariants.gate.config import ConfigError, parse_severity_table

    table: dict[str, str] = {}
    for item in split_codes(values) or []:
        if "=" not in item:
            raise ConfigError(f"--severity {item!r}: expected RULE=LEVEL")
        k, v = item.split("=", 1)
        table[k.strip()] = v.strip().lower()
    return parse_severity_table(table, "--severity")


def _written_input(args: argparse.Namespace) -> str | None:
    """A file this run would write (--output, --write-baseline, --ledger) that is one of its inputs.

    A target that does not exist yet is no input, so a run writing new files walks nothing here.
    An existing one is matched by identity (device, inode), which a symlink or a hard link to it
    shares, so each input costs one ``stat``.  The files named on the command line are compared
    first; the named folders are walked only for a target the walk could find: one named like a
    log, a capture, a SQLite database or its journal, or one that is a link (an existing report
    of its own rerun is neither, and a root of a million logs, or a bucket, is not listed for it).
    A log's capture is looked up as the check does (in the walk's own listing, or one listing of
    the folder of logs named one by one); the inputs are streamed, never listed."""
    targets = [
        (flag, getattr(args, attr))
        for flag, attr in (("--output", "output"), ("--write-baseline", "write_baseline"), ("--ledger", "ledger"))
        if getattr(args, attr, None)
    ]
    existing = {ino: (flag, t) for flag, t in targets if (ino := _inode(Path(t))) is not None}
    if not existing:
        return None
    from functools import lru_cache

    from invariants.read.capture import capture_of, folder_names
    from invariants.read.discover import iter_discover
    from invariants.read.source import SQLITE_SIDECARS, is_url

    names = lru_cache(maxsize=1)(folder_names)  # logs named one by one (a shell glob) come a folder at a time
    local = [p for p in args.paths if not is_url(p)]  # a URL never names a file this run writes

    def inputs() -> Iterator:
        yield from args.captures or []
        yield from local
        if not any(_findable(Path(t)) for _, t in existing.values()):
            return
        databases: set = set()
        for s in iter_discover(local, []):
            yield s.path
            if s.member is None:
                if (c := capture_of(s, names)) is not None:
                    yield c
            elif s.path not in databases:  # what SQLite reads with a store: writing over it loses sessions
                databases.add(s.path)
                yield from (Path(f"{s.path}{sidecar}") for sidecar in SQLITE_SIDECARS)

    for p in inputs():
        if (ino := _inode(p)) is not None and (hit := existing.get(ino)) is not None:
            return f"{hit[0]} {hit[1]}: that is one of the inputs; logs and captures are never written"
    return None


def _findable(target: Path) -> bool:
    """Whether a walk of the inputs could find ``target`` (an existing file): named like a log, a
    capture, a SQLite database or one of its journals, or reached by another name (a link)."""
    from invariants.read.source import SQLITE_SIDECARS, SQLITE_SUFFIXES, is_capture_name, is_log_name

    try:
        st = os.lstat(target)
    except OSError:
        return True
    name = target.name
    for sidecar in SQLITE_SIDECARS:
        name = name.removesuffix(sidecar)
    return (
        not stat.S_ISREG(st.st_mode)
        or st.st_nlink > 1
        or is_log_name(name)
        or is_capture_name(name)
        or name.endswith(SQLITE_SUFFIXES)
    )


def _inode(path) -> tuple[int, int] | None:
    if not isinstance(path, (str, os.PathLike)):
        return None
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def configuration(args: argparse.Namespace):
    """The file's configuration with the command line merged on top (a flag's list replaces the file's)."""
    from dataclasses import replace

    from invariants.gate.config import ConfigError, validate_selectors

    from .common import load_configuration

    cfg = load_configuration(args)
    select = validate_selectors(split_codes(args.select) or [], "--select") if args.select is not None else cfg.select
    ignore = validate_selectors(split_codes(args.ignore) or [], "--ignore") if args.ignore is not None else cfg.ignore
    baseline = args.baseline or (cfg.baseline if not args.write_baseline else None)
    profile = args.profile if args.profile is not None else cfg.profile
    if profile is not None:
        from invariants.read.profiles import PROFILES

        if profile not in PROFILES:
            raise ConfigError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
    return replace(
        cfg,
        select=select,
        ignore=ignore,
        severity={**cfg.severity, **_severity_flags(args.severity)},
        baseline=baseline,
        profile=profile,
        fail_on=args.fail_on or cfg.fail_on or "error",
        format=args.format or cfg.format or "text",
    )


def run(args: argparse.Namespace) -> int:
    from invariants import __version__
    from invariants.gate.baseline import BaselineError
    from invariants.gate.config import ConfigError
    from invariants.gate.formats import MACHINE_FORMATS, ReportContext, statistics_text, write
    from invariants.gate.ledger import LedgerError
    from invariants.gate.pipeline import RunStats, check_report
    from invariants.gate.report import requests_phrase
    from invariants.gate.result import CheckOptions

    started = time.perf_counter()
    try:
        cfg = configuration(args)
    except ConfigError as exc:
        return fail(str(exc))
    tokens, problem = token_settings(args, cfg)
    if problem:
        return fail(problem)
    if args.watch:
        if tokens is not None:  # a resumed log's appended steps are not counted yet
            return fail("--tokens does not combine with --watch")
        from invariants.read.source import is_url

        if urls := [p for p in args.paths if is_url(p)]:  # file-system events exist for local files only
            return fail(f"{urls[0]}: --watch needs local paths, not URLs")
        from .check_watch import run as run_watch

        return run_watch(args, cfg)
    fmt, fail_on = cfg.format, cfg.fail_on
    jobs = args.jobs if args.jobs is not None else cfg.jobs  # None: chosen from the run (serial when small)
    if jobs is not None and jobs < 0:
        return fail("--jobs must be >= 0")
    use_cache = not args.no_cache and (cfg.cache if cfg.cache is not None else True)

    clash = _written_input(args) or missing_captures(args.captures)
    if clash:
        return fail(clash)
    cache = None
    if use_cache:
        from invariants.gate.result_cache import DEFAULT_CACHE_DIR, ResultCache

        chosen = args.cache_dir or cfg.cache_dir
        cache = ResultCache(chosen or DEFAULT_CACHE_DIR)
        if unwritable := cache.unwritable():
            if chosen:  # a cache the user asked for and cannot have is a usage error
                return fail(unwritable)
            # The default cache beside the working directory is a convenience: a read-only
            # checkout still gets its verdict, only slower.  Say so once.
            if not args.quiet:
                print(inert(f"inspector: {unwritable}; checking without it"), file=sys.stderr)
            cache = None
    stats = RunStats()
    with ExitStack() as stack:
        executor: Any = None
        if args.scheduler is not None:
            from invariants.gate.executor_dask import SchedulerError, dask_executor

            try:
                executor = stack.enter_context(dask_executor(args.scheduler, None))  # progress: below
            except SchedulerError as exc:
                return fail(str(exc))
        if executor is None and jobs is None:
            from invariants.gate.executor import AutoExecutor

            executor = stack.enter_context(closing(AutoExecutor()))
            if args.verbose:
                executor.said = lambda m: print(inert(f"inspector: {m}"), file=sys.stderr)
        elif executor is None and jobs == 0 and args.verbose:
            from invariants.gate.executor import usable_cpus

            print(f"inspector: --jobs 0: {usable_cpus()} process(es), one per usable CPU", file=sys.stderr)
        from inspector.progress import CheckObserver, count_in_background, progress_for

        progress = progress_for("check", args.quiet)
        observer = None
        if progress is not None:
            stack.callback(progress.close)
            stack.callback(count_in_background(progress, args.paths))
            observer = CheckObserver(progress)
        try:
            result = check_report(
                args.paths,
                CheckOptions(captures=args.captures, profile=cfg.profile, tokens=tokens),
                config=cfg,
                jobs=jobs,
                executor=executor,
                cache=cache,
                stats=stats,
                ledger=args.ledger,
                allow_empty=args.allow_empty,
                observer=observer,
                process_ends=args.exits,
            )
        except (BaselineError, LedgerError) as exc:
            return fail(str(exc))
    for problem in result.problems:
        fail(problem)
    if not args.quiet:
        for note in result.notes:
            print(f"inspector: note: {inert(note)}", file=sys.stderr)
        if cache is not None and cache.failed:
            said = f"the result cache stopped being written ({cache.failed}); the verdict is whole, the next run slower"
            print(f"inspector: note: {inert(said)}", file=sys.stderr)

    if args.write_baseline:
        from invariants.gate.baseline import write_baseline

        try:
            n = write_baseline(args.write_baseline, list(result.findings()), __version__)
        except OSError as exc:
            from invariants.model.atomic import write_error

            return fail(write_error(args.write_baseline, "baseline", exc))
        if not args.quiet:
            print(inert(f"inspector: wrote {n} finding(s) to baseline {args.write_baseline}"), file=sys.stderr)
        return 2 if result.problems else 0

    ctx = ReportContext(
        fail_on=fail_on,
        verbose=args.verbose,
        statistics=args.statistics,
        baseline=result.baseline,
        base_dir=report_root(args, cfg),
        tool_version=__version__,
    )
    if args.output:
        from invariants.model.atomic import atomic_file, write_error

        try:
            with atomic_file(args.output) as fh:  # the report streamed into the temporary file, renamed
                write(result, fmt, ctx, fh.write)
        except OSError as exc:
            result.close()
            return fail(write_error(args.output, "report", exc))
    else:
        write(result, fmt, ctx, sys.stdout.write)
        sys.stdout.flush()
    result.close()

    if not args.quiet and (fmt in MACHINE_FORMATS or args.output):
        s = result.summary()
        line = (
            f"inspector: {s['sessions']} session(s), {s['events']} events, {requests_phrase(result)}: "
            f"{s['errors']} error(s), {s['warnings']} warning(s), {s['infos']} info(s)"
        )
        if result.baseline is not None:
            line += f"; baseline: {result.baseline.suppressed} known, {len(result.baseline.stale)} no longer occur"
        line += f" [{time.perf_counter() - started:.2f}s"
        if cache is not None:
            line += f", cache {stats.cache_hits}/{stats.units} units"
        line += "]"
        print(line, file=sys.stderr)
        if args.statistics and fmt not in ("text", "json") and result.finding_count:
            print(statistics_text(result), file=sys.stderr)
    if result.problems:
        return 2
    if args.exit_zero:
        return 0
    return 1 if result.failed(fail_on) else 0


def report_root(args: argparse.Namespace, cfg) -> Path:
    """What report paths are relative to (:func:`invariants.gate.formats.project_root`)."""
    from invariants.gate.formats import project_root

    return project_root(getattr(args, "project_root", None), cfg.root if cfg.path is not None else None, Path.cwd())


def token_settings(args: argparse.Namespace, cfg) -> tuple[TokenSettings | None, str | None]:
    """What ``--tokens`` / ``tokens = true`` asks for, or the one-line reason it cannot be had."""
    wanted = args.tokens if args.tokens is not None else bool(cfg.tokens)
    if not wanted:
        if args.context_window is not None:
            return None, "--context-window needs --tokens"
        return None, None
    if args.context_window is not None and args.context_window <= 0:
        return None, "--context-window must be a positive number of tokens"
    from invariants.analysis.token_rules import TokenSettings
    from invariants.analysis.tokenizer import TokenizerUnavailable, tokenizer

    try:
        tokenizer()  # loaded before the check, so a missing or broken install is said up front
    except TokenizerUnavailable as exc:
        return None, f"--tokens: {exc}"
    return TokenSettings(context_window=args.context_window, windows=dict(cfg.context_windows)), None
