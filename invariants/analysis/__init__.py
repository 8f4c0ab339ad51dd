"""Read-only views over replay results: fork seeds, cache economics, raw event views."""
