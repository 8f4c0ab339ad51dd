"""Applying a configuration to findings: select, ignore, severity, per-path ignores, baseline.

One :class:`FindingPolicy` is made from a :class:`~invariants.gate.config.Config`
and applied by the gate, the TUI (through :func:`invariants.gate.pipeline.check`)
and the index (per session, as it writes), so they all show the same
findings.  The per-finding steps (select, ignore, severity, per-path) can run
anywhere; the baseline matches a multiset of entries, so it is given the
findings of whole sessions in report order.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from invariants.gate.baseline import BaselineOutcome, apply_baseline, read_baseline
from invariants.gate.config import Config
from invariants.model.findings import Finding
from invariants.model.registry import RULES
from invariants.read.source import is_url


def rule_matches(rule_code: str, patterns: Iterable[str]) -> bool:
    """A pattern names a rule code, a code prefix (``DIV``) or a category."""
    rule = RULES.get(rule_code)
    for p in patterns:
        if (
            rule_code == p
            or (p and rule_code.startswith(p) and p.isalpha() and p.isupper())
            or (rule and rule.category == p)
        ):
            return True
    return False


def expand_severity(table: dict[str, str]) -> dict[str, str]:
    """Selector table -> rule code table.

    Categories apply first, then code prefixes, then exact codes, so the most
    specific entry wins whatever the order in the file.
    """
    out: dict[str, str] = {}
    ordered = sorted(
        table.items(), key=lambda kv: 2 if kv[0].upper() in RULES else (1 if kv[0].isalpha() and kv[0].isupper() else 0)
    )
    for sel, level in ordered:
        key = sel.upper() if sel.upper() in RULES else sel
        for code, rule in RULES.items():
            if code == key or rule.category == sel or (key.isalpha() and key.isupper() and code.startswith(key)):
                out[code] = level
    return out


def path_ignored(file: str | None, rule: str, per_path: dict[str, list[str]], root: Path) -> bool:
    """Does a per-path-ignores entry drop ``rule`` for ``file``?

    A glob matches the file's path relative to ``root`` (the config's folder),
    its absolute path, or its bare name; ``*`` crosses folders, ``**/`` may
    match no folder at all.
    """
    if not file or not per_path:
        return False
    if is_url(file):  # a URL is matched as written, and by its last part
        candidates = {file, file.rstrip("/").rpartition("/")[2]}
    else:
        p = Path(file)
        absolute = (p if p.is_absolute() else Path.cwd() / p).resolve()
        candidates = {absolute.as_posix(), p.name, p.as_posix()}
        try:
            candidates.add(absolute.relative_to(root.resolve()).as_posix())
        except ValueError:
            pass
    for glob, rules in per_path.items():
        patterns = {glob, glob.replace("**/", "")}
        if any(fnmatch.fnmatchcase(c, g) for c in candidates for g in patterns):
            if rule_matches(rule, rules):
                return True
    return False


def report_order(files: Iterable[str]) -> Callable[[Finding], tuple]:
    """The sort key of the report: sessions in discovery order (``files``), then seq, line and rule."""
    order = {f: i for i, f in enumerate(files)}
    end = len(order)

    def key(f: Finding) -> tuple:
        return (order.get(f.file or "", end), f.file or "", f.seq if f.seq is not None else -1, f.line or 0, f.rule)

    return key


@dataclass(slots=True)
class FindingPolicy:
    """A configuration made ready to apply (severity selectors expanded, the baseline read)."""

    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    severity: dict[str, str] = field(default_factory=dict)  # rule code -> level
    per_path_ignores: dict[str, list[str]] = field(default_factory=dict)
    root: Path = field(default_factory=Path.cwd)
    baseline_file: str | None = None
    baseline_entries: list[dict[str, Any]] | None = None

    @classmethod
    def of(cls, config: Config | None) -> "FindingPolicy":
        """The policy of ``config`` (None: report everything); an unreadable baseline raises ``BaselineError``."""
        if config is None:
            return cls()
        return cls(
            select=config.select,
            ignore=list(config.ignore),
            severity=expand_severity(config.severity),
            per_path_ignores=dict(config.per_path_ignores),
            root=config.root,
            baseline_file=config.baseline,
            baseline_entries=read_baseline(config.baseline) if config.baseline else None,
        )

    def judge(self, f: Finding) -> Finding | None:
        """``f`` as the configuration reports it (its severity overridden), or None when it is not reported."""
        if self.select is not None and not rule_matches(f.rule, self.select):
            return None
        if self.ignore and rule_matches(f.rule, self.ignore):
            return None
        if self.per_path_ignores and path_ignored(f.file, f.rule, self.per_path_ignores, self.root):
            return None
        level = self.severity.get(f.rule)
        return replace(f, severity=level) if level is not None and level != f.severity else f

    def filter(self, findings: Iterable[Finding]) -> list[Finding]:
        """Select, ignore, per-path ignores and severity, in the given order."""
        return [g for f in findings if (g := self.judge(f)) is not None]

    def absorb(
        self, findings: list[Finding], checked: Iterable[str] = ()
    ) -> tuple[list[Finding], BaselineOutcome | None]:
        """The baseline step: the findings it does not know, in order, and what it did (None: no baseline).

        ``findings`` in report order (of equal findings the baseline absorbs the
        first); ``checked`` names the owners the run looked at, so the outcome
        lists entries that no longer occur (see :func:`~invariants.gate.baseline.apply_baseline`).
        """
        if self.baseline_entries is None:
            return findings, None
        outcome = apply_baseline(findings, self.baseline_entries, checked, str(self.baseline_file))
        return outcome.new, outcome

    def apply(self, findings: list[Finding]) -> list[Finding]:
        """Every step on the findings of whole sessions in report order (how the index applies it)."""
        return self.absorb(self.filter(findings))[0]

    def key(self) -> str:
        """A fingerprint of everything that changes which findings are reported (the index stores it)."""
        payload = [
            self.select,
            self.ignore,
            sorted(self.severity.items()),
            sorted(self.per_path_ignores.items()),
            str(self.root) if self.per_path_ignores else None,
            self.baseline_entries,
        ]
        import hashlib  # deferred: only the index asks for the key

        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:20]
