"""The library version: one place, read by the result cache, reports and the CLI."""

__version__ = "0.1.0"
