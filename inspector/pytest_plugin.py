"""pytest plugin: session logs as test items, and a fixture that checks the log a test just wrote.

* ``pytest --inspector-logs DIR`` collects every session log under DIR as a
  test item (``<log path>::<session id>``) that fails with the log's findings
  at or above ``--inspector-fail-on`` (default: the configuration's
  ``fail-on``, else ``error``), explained by
  :mod:`invariants.gate.formats.explain`.  Findings about a file that is not
  a checked log (a capture line naming no checked session) get an item of
  their own, and so do unusable inputs.  DIR is checked once, as a whole, by
  :func:`invariants.check`, so fork seeds and captures are judged as the gate
  judges them.
* the ``inspector_check`` fixture: ``result = inspector_check(path); assert
  result.ok, result.explain()``.

Both read the configuration the CLI reads (``inspector.toml`` /
``[tool.inspector]``, found from pytest's rootdir up, or
``--inspector-config FILE``).  Registered through the ``pytest11`` entry
point, this module loads in every pytest session of a project that installs
the package, so it imports nothing of the checker until a log is collected or
the fixture is called.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import pytest

if TYPE_CHECKING:
    from invariants import CheckResult, Config, Finding

_DIRS = pytest.StashKey[frozenset]()
_SETTINGS = pytest.StashKey[tuple]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("inspector", "dsh session logs (dsh-inspector)")
    group.addoption(
        "--inspector-logs",
        action="append",
        default=[],
        metavar="DIR",
        help="check every session log under DIR as a test item (repeatable)",
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
    named = config.getoption("inspector_logs") or []
    dirs = []
    for raw in named:
        d = (config.invocation_params.dir / raw).resolve()
        if not d.is_dir():
            raise pytest.UsageError(f"--inspector-logs {raw}: not a directory")
        dirs.append(d)
    dirs = list(dict.fromkeys(dirs))
    config.stash[_DIRS] = frozenset(dirs)
    if dirs:
        settings(config)  # a bad configuration is a usage error before anything runs
        _collect_too(config, dirs)


def _collect_too(config: pytest.Config, dirs: list[Path]) -> None:
    """Add each DIR to the paths pytest collects, unless a path it collects already holds it."""
    here = config.invocation_params.dir
    given = [(here / a.split("::", 1)[0]).resolve() for a in config.args]
    for d in dirs:
        if not any(d == g or g in d.parents for g in given):
            config.args.append(str(d))


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


# -- collected logs -------------------------------------------------------------------------------
class LogFindings(Exception):
    """A log's item failed; ``report`` is what the test report shows."""

    def __init__(self, report: str) -> None:
        super().__init__(report)
        self.report = report


class InspectorLogs(pytest.Directory):
    """One ``--inspector-logs`` folder: checked once, then one node per log file (or other reported file)."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        from invariants import CheckOptions, check
        from invariants.gate.formats.explain import at_or_above

        cfg, fail_on = settings(self.config)
        rel = os.path.relpath(self.path)  # findings name files as a check from here would
        result = check(
            rel if not rel.startswith("..") else self.path,
            CheckOptions(profile=cfg.profile),
            config=cfg,
            jobs=cfg.jobs if cfg.jobs is not None else 1,
        )
        failing = at_or_above(result.findings, fail_on)
        by_file: dict[str, list[Finding]] = {}
        for f in failing:
            by_file.setdefault(f.file or "", []).append(f)
        files: dict[Path, list] = {}
        for s in result.sessions:
            files.setdefault(Path(s.path).absolute(), []).append((s, by_file.pop(s.file, [])))
        for path, sessions in files.items():
            yield SessionLogFile.from_parent(self, path=path, sessions=sessions, fail_on=fail_on)
        for file, found in by_file.items():  # a capture's lines that no checked log explains, ...
            yield ReportedFile.from_parent(self, path=Path(file).absolute(), findings=found, fail_on=fail_on)
        if result.problems:
            yield InputsItem.from_parent(self, name="unusable-input", problems=list(result.problems))


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
    """An item that fails with an explained report (no traceback)."""

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style=None) -> Any:
        if isinstance(excinfo.value, LogFindings):
            return excinfo.value.report
        return super().repr_failure(excinfo, style=style)


class SessionItem(_Explained):
    """One session: fails with its findings at or above fail-on."""

    def __init__(self, *, summary, findings: list, fail_on: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.summary = summary
        self.findings = findings
        self.fail_on = fail_on

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
        super().__init__(**kwargs)
        self.findings = findings
        self.fail_on = fail_on

    def runtest(self) -> None:
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
