"""``inspector rules [CODE]``: every rule with its category, default severity and a one-line
rationale; or one rule (by code or name) explained with an example, the tab that shows it,
when it fires and where it is raised; or a category or code prefix.  Severities set in the
configuration are shown and marked."""

from __future__ import annotations

import argparse
import ast
import functools
import json
import re
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "rules", help="list the rules, or explain one", description="List every rule, or explain one with an example."
    )
    p.add_argument("code", nargs="?", help="a rule code, e.g. DIV001")
    p.add_argument("--profiles", action="store_true", help="list the format profiles instead")
    p.add_argument("--markdown", action="store_true", help="print the rule reference as Markdown (docs/RULES.md)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="json: the rule table as a JSON array")
    p.add_argument(
        "--config", metavar="FILE", help="show severities as configured in this inspector.toml / pyproject.toml"
    )
    p.add_argument("--isolated", action="store_true", help="ignore configuration files (show default severities only)")


def run(args: argparse.Namespace) -> int:
    from invariants.model.registry import RULES
    from invariants.read.profiles import PROFILES

    from .common import fail

    if args.profiles:
        for p in PROFILES.values():
            print(f"{p.name:<15} {p.description}")
        return 0
    if args.markdown:
        print(rules_markdown())
        return 0
    configured = _configured(args)
    if isinstance(configured, int):
        return configured
    if args.code:
        rule = RULES.get(args.code.upper()) or next((r for r in RULES.values() if r.name == args.code.lower()), None)
        if rule is None:
            subset = [
                r
                for r in RULES.values()
                if r.category == args.code or (args.code.isalpha() and r.code.startswith(args.code.upper()))
            ]
            if not subset:
                return fail(f"unknown rule {args.code!r} (try `inspector rules` for the list)")
            return _list(subset, configured, args.format)
        if args.format == "json":
            print(json.dumps(_rule_json(rule, configured), indent=2))
            return 0
        sev = rule.severity + (
            f"; configured {configured[rule.code]}"
            if rule.code in configured and configured[rule.code] != rule.severity
            else ""
        )
        print(f"{rule.code} {rule.name} ({rule.category}, default {sev})\n")
        print(rule.summary + "\n")
        print("Why it matters: " + rule.rationale + "\n")
        if rule.example:
            print("Example: " + rule.example + "\n")
        for line in _facts(rule):
            print(line)
        print("Raised in: " + (", ".join(raise_sites().get(rule.code, ())) or "(not found in the source)"))
        return 0
    return _list(list(RULES.values()), configured, args.format)


def one_line(text: str) -> str:
    """The first sentence of a rationale."""
    for i, c in enumerate(text):
        if c in ".;" and (i + 1 == len(text) or text[i + 1] == " "):
            return text[: i + 1] if c == "." else text[:i] + "."
    return text


def _configured(args: argparse.Namespace) -> dict[str, str] | int:
    from invariants.gate.config import ConfigError, load_config
    from invariants.gate.policy import expand_severity

    from .common import fail

    try:
        cfg = load_config(Path(args.config) if args.config else None, isolated=args.isolated)
    except ConfigError as exc:
        return fail(str(exc))
    return expand_severity(cfg.severity)


def _rule_json(r, configured: dict[str, str]) -> dict:
    return {
        "code": r.code,
        "name": r.name,
        "category": r.category,
        "severity": configured.get(r.code, r.severity),
        "default_severity": r.severity,
        "summary": r.summary,
        "rationale": r.rationale,
        "example": r.example,
        "tab": r.tab,
        "fires": r.fires,
        "loses_header": r.loses_header,
        "relaxed_in_fixtures": r.relaxed_in_fixtures,
        "unreadable_line": r.unreadable_line,
        "raised_in": list(raise_sites().get(r.code, ())),
    }


def _list(rules: list, configured: dict[str, str], fmt: str) -> int:
    if fmt == "json":
        print(json.dumps([_rule_json(r, configured) for r in rules], indent=2))
        return 0
    groups: dict[str, list] = {}
    for r in rules:
        groups.setdefault(r.category, []).append(r)
    for category, members in groups.items():
        print(category)
        for r in members:
            sev = configured.get(r.code, r.severity)
            mark = "*" if sev != r.severity else " "
            print(f"  {r.code}  {sev:<7}{mark} {r.name:<28} {one_line(r.rationale)}")
    if any(configured.get(r.code, r.severity) != r.severity for r in rules):
        print("\n* severity set by configuration")
    return 0


def rules_markdown() -> str:
    from invariants.model.registry import rules_by_category

    out = [
        "# Rules",
        "",
        "Generated by `inspector rules --markdown` from `invariants/model/registry.py` (where each rule is",
        "raised: from the source of `invariants/`); do not edit by hand.",
        "",
    ]
    for category, rules in rules_by_category().items():
        out += [f"## {category}", ""]
        for r in rules:
            out += [f"### {r.code} `{r.name}` ({r.severity})", "", r.summary, "", f"*Why:* {r.rationale}", ""]
            if r.example:
                out += [f"*Example:* `{r.example}`", ""]
            out += [" ".join(_facts(r)), ""]
            out += ["*Raised in:* " + ", ".join(f"`{site}`" for site in raise_sites().get(r.code, ())), ""]
    return "\n".join(out)


_FIRES = {
    "while-read": "as the log is read and folded",
    "after-fold": "after the fold (a resumed replay carries it over)",
    "at-end": "about where the log ends (follow mode reports it when it stops)",
}


def _facts(r) -> list[str]:
    """What the TUI and follow mode know of a rule, in words (its registry row's fields)."""
    out = [f"Shown in the {r.tab} tab; fires {_FIRES[r.fires]}."]
    if r.loses_header:
        out.append("A lost header event explains it: after lost events it counts in the loss.")
    if r.relaxed_in_fixtures:
        out.append("In a snapshot fixture an error becomes LOG015.")
    if r.unreadable_line:
        out.append("A line the reader cannot read: a run of them is one finding; a log mostly of them is LOG019.")
    return out


_CODE = re.compile(r"[A-Z]{3}[0-9]{3}")


@functools.cache
def raise_sites() -> dict[str, tuple[str, ...]]:
    """Rule code -> the ``module:function`` of every place in ``invariants`` that names it.

    Read from the source: a code written as a string inside a function (not compared with
    something), outside the registry, is where that function raises it.
    """
    import invariants

    root = Path(invariants.__file__).resolve().parent
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        module = ".".join(("invariants", *path.relative_to(root).with_suffix("").parts))
        if module in ("invariants.model.registry", "invariants.__init__"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
            if _CODE.search(text):
                _sites(ast.parse(text), module, "", False, False, found)
        except (OSError, SyntaxError, ValueError):
            continue
    return {code: tuple(sorted(sites)) for code, sites in sorted(found.items())}


def _sites(node: ast.AST, module: str, where: str, in_def: bool, compared: bool, found: dict[str, set[str]]) -> None:
    for child in ast.iter_child_nodes(node):
        inner, in_function, cmp = where, in_def, compared or isinstance(child, ast.Compare)
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = f"{where}.{child.name}" if where else child.name
            in_function = in_def or not isinstance(child, ast.ClassDef)
        elif isinstance(child, ast.Constant) and isinstance(child.value, str) and _CODE.fullmatch(child.value):
            if in_def and not cmp:
                found.setdefault(child.value, set()).add(f"{module}:{where}")
        _sites(child, module, inner, in_function, cmp, found)
