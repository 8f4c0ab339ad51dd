"""Helpers shared by the tests: log builders, TUI helpers, fuzz inputs, mutators, cases."""
