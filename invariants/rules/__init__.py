"""Rules: one registry table of every finding the checker can make."""

from invariants.model.registry import RULES, Rule, get_rule

__all__ = ["RULES", "Rule", "get_rule"]
