"""The rule table: code, category, default severity, rationale and example.

Every finding the library emits names a code from this table, so the table is
the single place where a rule is documented (``inspector rules`` prints it,
docs/RULES.md is generated from it).  Checks look up severity and category
here instead of hard-coding them, which is what lets configuration override a
severity without touching the checks.  The rows themselves are in
:mod:`~invariants.model.rules_log` and :mod:`~invariants.model.rules_request`,
in the order ``inspector rules`` lists them; a row's fields are :class:`~invariants.model.rule.Rule`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from invariants.model import rules_log, rules_request
from invariants.model.rule import FIRES, TABS, Rule

if TYPE_CHECKING:
    from invariants.model.findings import Finding

__all__ = ["FIRES", "RULES", "TABS", "Rule", "get_rule", "make_finding", "rules_by_category", "rules_where"]

_TABLE: list[Rule] = [*rules_log.ROWS, *rules_request.ROWS]

RULES: dict[str, Rule] = {r.code: r for r in _TABLE}
assert len(RULES) == len(_TABLE), "duplicate rule code"


def rules_where(**fields: Any) -> frozenset[str]:
    """The codes of the rules whose fields have these values, e.g. ``rules_where(fires="at-end")``."""
    return frozenset(r.code for r in _TABLE if all(getattr(r, k) == v for k, v in fields.items()))


def get_rule(code: str) -> Rule:
    return RULES[code]


def rules_by_category() -> dict[str, list[Rule]]:
    out: dict[str, list[Rule]] = {}
    for r in _TABLE:
        out.setdefault(r.category, []).append(r)
    return out


_LOCATION_INTS = ("line", "seq", "turn", "step")


def make_finding(code: str, message: str, **where: Any) -> Finding:
    """A Finding for rule ``code`` with the rule's category and default severity.

    ``line``, ``seq``, ``turn`` and ``step`` are integers or None in every report: a
    turn or step the log wrote as something else (a string, a list...) is moved to
    ``detail["logged_<key>"]`` as a short JSON preview.
    """
    from invariants.model.findings import Finding
    from invariants.model.jsonvalue import is_safe_int, shorten

    for key in _LOCATION_INTS:
        v = where.get(key)
        if v is None or (type(v) is int and is_safe_int(v)):
            continue
        if isinstance(v, float) and v.is_integer() and is_safe_int(int(v)):
            where[key] = int(v)
            continue
        where[key] = None
        where["detail"] = {**(where.get("detail") or {}), f"logged_{key}": shorten(v, 80)}
    rule = RULES[code]
    return Finding(rule=code, category=rule.category, severity=rule.severity, message=message, **where)
