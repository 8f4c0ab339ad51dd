"""Rules: one registry table of every finding the checker can make."""

from .registry import RULES, Rule, get_rule

__all__ = ["RULES", "Rule", "get_rule"]
