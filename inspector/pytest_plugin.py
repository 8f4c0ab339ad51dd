"""pytest plugin: session logs as test items, and a fixture that checks the log a test just wrote.

* ``pytest --inspector-logs DIR`` collects every session log under DIR as a
  test item (``<log path>::<session id>``) that fails with the log's findings
  at or above ``--inspector-fail-on`` (default: the configuration's
  ``fail-on``, else ``error``), explained by
  :mod:`invariants.gate.formats.explain`.  Findings about a file that is not
  a checked log (a capture line naming no checked session) get an item of
  their own, and so do unusable inputs.
* the ``inspector_check`` fixture: ``result = inspector_check(path); assert
  result.ok, result.explain()``.

As pytest-mypy does: every item carries the ``inspector`` marker (``-m
inspector``), and each session item has its findings' rule codes and names
as keywords (``-k DIV001``, ``-k DIV``, ``-k messages-diverge``).  What is
checked is what the command line names: DIR as a whole (so fork seeds and
captures are judged as the gate judges them), or only the files, folders and
node ids given under it (``pytest logs/a.jsonl``).  The check runs once per
run: in-process at collection, or under pytest-xdist on the controller before
the workers start, each worker reading its result from a file the controller
names in ``workerinput`` (workers never check).

Both read the configuration the CLI reads (``inspector.toml`` /
``[tool.inspector]``, found from pytest's rootdir up, or
``--inspector-config FILE``).  Registered through the ``pytest11`` entry
point, this module loads in every pytest session of a project that installs
the package, so it imports nothing of the checker until a log is collected or
the fixture is called.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import pytest

if TYPE_CHECKING:
    from invariants import CheckResult, Config, Finding
    from invariants.gate.result import SessionSummary

MARKER = "inspector"
WORKER_INPUT = "inspector_results"  # the xdist workerinput key naming the controller's result file

_DIRS = pytest.StashKey[frozenset]()
_SCOPES = pytest.StashKey[dict]()  # DIR -> the paths under it this run checks
_CHECKED = pytest.StashKey[dict]()  # DIR -> Checked
_RESULTS_FILE = pytest.StashKey[str]()  # on an xdist worker: the controller's result file
_SETTINGS = pytest.StashKey[tuple]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("inspector", "dsh session logs (dsh-inspector)")
    group.addoption(
        "--inspector-logs",
        action="append",
        default=[],
        metavar="DIR",
        help="check every session log under DIR as a test item (repeatable); paths and node ids under DIR "
        "on the command line narrow the check to them",
    )
    group.addoption(
        "--inspector-fail-on",
        choices=("error", "warning", "info"),
        default=None,
        help="lowest severity that fails a log's item or the fixture's result.ok (default: the configuration's "
        "fail-on, else error)",
    )
    group.addoption(
        "--inspector-config",
        metavar="FILE",
        default=None,
        help="read inspector settings from this inspector.toml or pyproject.toml "
        "(default: the nearest one from the rootdir up)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: a dsh-inspector session-log check (--inspector-logs items, reduce --as-test repros)"
    )
    named = config.getoption("inspector_logs") or []
    dirs = []
    for raw in named:
        d = (config.invocation_params.dir / raw).resolve()
        if not d.is_dir():
            raise pytest.UsageError(f"--inspector-logs {raw}: not a directory")
        dirs.append(d)
    dirs = list(dict.fromkeys(dirs))
    config.stash[_DIRS] = frozenset(dirs)
    if not dirs:
        return
    settings(config)  # a bad configuration is a usage error before anything runs
    config.stash[_SCOPES] = _scopes(config, dirs)
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and WORKER_INPUT in workerinput:  # an xdist worker: the controller has checked
        config.stash[_RESULTS_FILE] = workerinput[WORKER_INPUT]
    elif hasattr(config.pluginmanager.hook, "pytest_configure_node"):  # xdist's hook: it is loaded, by any name
        config.pluginmanager.register(_XdistController(), "inspector-xdist-controller")


def _scopes(config: pytest.Config, dirs: list[Path]) -> dict[Path, list[Path]]:
    """What to check under each DIR: all of it when a command-line path holds it (or none is under it,
    and then DIR is added to the paths pytest collects), else the paths and node ids given under it."""
    from invariants.read.source import is_capture_name

    here = config.invocation_params.dir
    given = [(here / a.split("::", 1)[0]).resolve() for a in config.args]
    scopes: dict[Path, list[Path]] = {}
    for d in dirs:
        inside = [g for g in given if d in g.parents]
        if any(d == g or g in d.parents for g in given) or not inside:
            scopes[d] = [d]
            if not any(d == g or g in d.parents for g in given):
                config.args.append(str(d))
            continue
        # a capture named alone is judged with the logs of its folder
        narrowed = {g.parent if g.is_file() and is_capture_name(g.name) else g for g in inside}
        scopes[d] = sorted(narrowed)
    return scopes


@pytest.hookimpl(tryfirst=True)
def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A DIR (and the folders on the way to it) is collected even where ``norecursedirs`` would skip it
    (``.sessions/``, ``build/``)."""
    dirs = config.stash.get(_DIRS, frozenset())
    if dirs and any(d == collection_path or collection_path in d.parents for d in dirs):
        return False
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    dirs = parent.config.stash.get(_DIRS, frozenset())
    if dirs and path.resolve() in dirs:
        return InspectorLogs.from_parent(parent, path=path)
    return None


def settings(config: pytest.Config) -> tuple[Config, str]:
    """The configuration in force for this pytest run and the fail-on it implies (read once)."""
    if _SETTINGS not in config.stash:
        from invariants import ConfigError, load_config

        named = config.getoption("inspector_config")
        try:
            cfg = load_config(config.invocation_params.dir / named if named else None, start=Path(config.rootpath))
        except ConfigError as exc:
            raise pytest.UsageError(f"inspector: {exc}") from None
        config.stash[_SETTINGS] = (cfg, config.getoption("inspector_fail_on") or cfg.fail_on or "error")
    return config.stash[_SETTINGS]


# -- the check, once per run ----------------------------------------------------------------------
@dataclass
class Checked:
    """What the items of one DIR need of its check (plain data: it travels to xdist workers as JSON)."""

    sessions: list[SessionSummary]
    findings: list[Finding]  # every reported finding, whatever its severity
    problems: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "sessions": [s.to_json() for s in self.sessions],
            "findings": [f.to_json() for f in self.findings],
            "problems": list(self.problems),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Checked:
        from invariants.gate.result import SessionSummary
        from invariants.model.findings import Finding

        return cls(
            [SessionSummary.from_json(s) for s in d["sessions"]],
            [Finding(**f) for f in d["findings"]],
            list(d["problems"]),
        )


def checked(config: pytest.Config) -> dict[Path, Checked]:
    """Each DIR's check: read from the controller's file on an xdist worker, else run here (once)."""
    if _CHECKED not in config.stash:
        named = config.stash.get(_RESULTS_FILE, None)
        if named is not None:
            data = json.loads(Path(named).read_text(encoding="utf-8"))
            config.stash[_CHECKED] = {Path(d): Checked.from_json(c) for d, c in data.items()}
        else:
            config.stash[_CHECKED] = {d: _check(config, paths) for d, paths in config.stash[_SCOPES].items()}
    return config.stash[_CHECKED]


def _check(config: pytest.Config, paths: list[Path]) -> Checked:
    from invariants import CheckOptions, check

    cfg, _ = settings(config)
    named = []
    for p in paths:
        rel = os.path.relpath(p)  # findings name files as a check from here would
        named.append(rel if not rel.startswith("..") else str(p))
    result = check(
        named if len(named) > 1 else named[0],
        CheckOptions(profile=cfg.profile),
        config=cfg,
        jobs=cfg.jobs if cfg.jobs is not None else 1,
    )
    return Checked(list(result.sessions), list(result.findings), list(result.problems))


class _XdistController:
    """Registered on an xdist controller only: checks before the first worker starts and names the
    result file in every worker's ``workerinput`` (the workers collect the same items from it)."""

    def __init__(self) -> None:
        self.file: str | None = None

    def pytest_configure_node(self, node: Any) -> None:
        if self.file is None:
            data = {str(d): c.to_json() for d, c in checked(node.config).items()}
            fd, self.file = tempfile.mkstemp(prefix="inspector-pytest-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh)
        node.workerinput[WORKER_INPUT] = self.file

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.file is not None:
            Path(self.file).unlink(missing_ok=True)


# -- collected logs -------------------------------------------------------------------------------
class LogFindings(Exception):
    """A log's item failed; ``report`` is what the test report shows."""

    def __init__(self, report: str) -> None:
        super().__init__(report)
        self.report = report


class InspectorLogs(pytest.Directory):
    """A folder of an ``--inspector-logs`` DIR: a node per checked log (or other reported file) in it, a node
    per subfolder holding some (so ``pytest DIR/sub`` finds its way), and at DIR the unusable inputs."""

    def __init__(self, *, root: Path | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.root = root if root is not None else self.path.resolve()

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        from invariants.gate.formats.explain import at_or_above

        done = checked(self.config)[self.root]
        _, fail_on = settings(self.config)
        here = self.path.resolve()
        at_root = here == self.root
        subfolders: set[Path] = set()

        def mine(path: Path) -> bool:
            """Whether ``path`` is a child of this node (a path outside DIR hangs under DIR itself)."""
            p = path.resolve()
            if p.parent == here or (at_root and self.root not in p.parents):
                return True
            if here in p.parents:
                subfolders.add(here / p.relative_to(here).parts[0])
            return False

        by_file: dict[str, list[Finding]] = {}
        for f in done.findings:
            by_file.setdefault(f.file or "", []).append(f)
        files: dict[Path, list] = {}
        for s in done.sessions:
            files.setdefault(Path(s.path).absolute(), []).append(s)
        for path, sessions in files.items():
            found = by_file.pop(sessions[0].file, [])
            if mine(path):
                yield SessionLogFile.from_parent(
                    self, path=path, sessions=_per_session(sessions, found), fail_on=fail_on
                )
        for file, found in by_file.items():  # a capture's lines that no checked log explains, ...
            path = Path(file).absolute()
            if at_or_above(found, fail_on) and mine(path):
                yield ReportedFile.from_parent(self, path=path, findings=found, fail_on=fail_on)
        for sub in sorted(subfolders):
            yield InspectorLogs.from_parent(self, path=sub, root=self.root)
        if at_root and done.problems:
            yield InputsItem.from_parent(self, name="unusable-input", problems=list(done.problems))


def _per_session(sessions: list, findings: list) -> list[tuple[Any, list]]:
    """Each session of one file with its findings (a SQLite database holds several; a finding that names none
    of them goes to the first)."""
    ids = {s.session for s in sessions}
    out: dict[str, list] = {s.session: [] for s in sessions}
    for f in findings:
        out[f.session if f.session in ids else sessions[0].session].append(f)
    return [(s, out[s.session]) for s in sessions]


class SessionLogFile(pytest.File):
    """A log file: one item per session in it (a SQLite database holds several)."""

    def __init__(self, *, sessions: list, fail_on: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sessions = sessions
        self.fail_on = fail_on

    def collect(self) -> Iterable[pytest.Item]:
        from invariants.model.inert import inert

        for summary, found in self.sessions:
            name = inert(summary.session).replace("::", ":")
            yield SessionItem.from_parent(self, name=name, summary=summary, findings=found, fail_on=self.fail_on)


class _Explained(pytest.Item):
    """An item that fails with an explained report (no traceback); marked ``inspector``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker(MARKER)

    def keyword_findings(self, findings: list) -> None:
        """Rule codes and names of the findings as keywords: ``-k DIV001`` (or ``-k DIV``) selects this item."""
        from invariants.model.registry import RULES

        for f in findings:
            self.extra_keyword_matches.add(f.rule)
            if f.rule in RULES:
                self.extra_keyword_matches.add(RULES[f.rule].name)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style=None) -> Any:
        if isinstance(excinfo.value, LogFindings):
            return excinfo.value.report
        return super().repr_failure(excinfo, style=style)


class SessionItem(_Explained):
    """One session: fails with its findings at or above fail-on."""

    def __init__(self, *, summary, findings: list, fail_on: str, **kwargs: Any) -> None:
        from invariants.gate.formats.explain import at_or_above

        super().__init__(**kwargs)
        self.summary = summary
        self.findings = at_or_above(findings, fail_on)
        self.fail_on = fail_on
        self.keyword_findings(findings)

    def runtest(self) -> None:
        if self.findings:
            from invariants.gate.formats.explain import explain_findings

            raise LogFindings(explain_findings(self.findings, [self.summary], self.fail_on))

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, f"{_rel(self)} (session {self.name})"


class ReportedFile(pytest.File):
    """A file with findings that is not a checked log (a capture): one item holding them."""

    def __init__(self, *, findings: list, fail_on: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.findings = findings
        self.fail_on = fail_on

    def collect(self) -> Iterable[pytest.Item]:
        yield FindingsItem.from_parent(self, name="findings", findings=self.findings, fail_on=self.fail_on)


class FindingsItem(_Explained):
    def __init__(self, *, findings: list, fail_on: str, **kwargs: Any) -> None:
        from invariants.gate.formats.explain import at_or_above

        super().__init__(**kwargs)
        self.findings = at_or_above(findings, fail_on)
        self.fail_on = fail_on
        self.keyword_findings(findings)

    def runtest(self) -> None:
        if self.findings:
            from invariants.gate.formats.explain import explain_findings

            raise LogFindings(explain_findings(self.findings, (), self.fail_on))

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, _rel(self)


class InputsItem(_Explained):
    """The inputs under DIR that could not be used (an unreadable log, ...): the gate exits 2 on them."""

    def __init__(self, *, problems: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problems = problems

    def runtest(self) -> None:
        from invariants.model.inert import inert

        raise LogFindings("\n".join(f"unusable input: {inert(p)}" for p in self.problems))

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, f"{_rel(self)}: unusable input"


def _rel(node: pytest.Item) -> str:
    try:
        return Path(os.path.relpath(node.path, node.config.rootpath)).as_posix()
    except ValueError:
        return str(node.path)


# -- the fixture ----------------------------------------------------------------------------------
@dataclass(repr=False)
class InspectorResult:
    """What ``inspector_check`` returns: the check's result judged at ``fail_on``."""

    result: CheckResult
    fail_on: str

    def __repr__(self) -> str:  # short: pytest prints it under a failed ``assert result.ok``
        c = self.result.counts()
        return (
            f"<InspectorResult fail_on={self.fail_on}: {len(self.result.sessions)} session(s), {c['error']} error(s), "
            f"{c['warning']} warning(s), {c['info']} info(s), {len(self.result.problems)} unusable input(s)>"
        )

    @property
    def ok(self) -> bool:
        """Every input was usable and no finding is at or above ``fail_on``."""
        return not self.result.problems and not self.result.failed(self.fail_on)

    @property
    def findings(self) -> list[Finding]:
        """Every reported finding (the configuration applied), whatever its severity."""
        return self.result.findings

    @property
    def failing(self) -> list[Finding]:
        """The findings at or above ``fail_on``."""
        from invariants.gate.formats.explain import at_or_above

        return at_or_above(self.result.findings, self.fail_on)

    def explain(self) -> str:
        """The readable report the ``--inspector-logs`` items fail with."""
        from invariants.gate.formats.explain import explain

        return explain(self.result, self.fail_on)


@pytest.fixture
def inspector_check(request: pytest.FixtureRequest):
    """Check session logs the test produced: ``inspector_check(path, captures=None, fail_on=None,
    config=None, **settings)``.

    ``path`` is a log, a folder or a list of them; ``captures`` explicit capture
    files; ``config`` a :class:`invariants.Config` instead of the project's;
    ``settings`` override fields of it (``ignore=["DIV"]``, ``severity={...}``,
    ``baseline=...``, ``profile=...``).  ``fail_on`` defaults to
    ``--inspector-fail-on``, then the configuration's, then ``error``.
    """

    def run(
        paths,
        *,
        captures: Iterable[str | os.PathLike] | None = None,
        fail_on: str | None = None,
        config: Config | None = None,
        **overrides: Any,
    ) -> InspectorResult:
        from dataclasses import fields, replace

        from invariants import CheckOptions, Config, check

        cfg = config if config is not None else settings(request.config)[0]
        known = {f.name for f in fields(Config)} - {"path", "root"}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(
                f"inspector_check: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        cfg = replace(cfg, **overrides)
        level = fail_on or request.config.getoption("inspector_fail_on") or cfg.fail_on or "error"
        options = CheckOptions(
            captures=[Path(c) for c in captures] if captures is not None else None, profile=cfg.profile
        )
        return InspectorResult(check(paths, options, config=cfg), level)

    return run
