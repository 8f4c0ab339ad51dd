"""The pipeline: sources + options -> CheckResult; executors, result cache, baseline, ledger, reports."""
