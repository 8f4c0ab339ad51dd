"""Pure library behind the inspector: load dsh session logs, fold request
headers, derive messages, rebuild every request and check it.

The public API is :func:`check` and the types it takes and returns::

    from invariants import check, load_config
    result = check("recordings/", config=load_config())
    assert result.ok, [f.message for f in result.findings]

Everything not in ``__all__`` is private.  Nothing in this package imports
Textual, sqlite-utils or the CLI, so a CI job that only checks pays for none
of them.
"""

from invariants.gate.baseline import BaselineError
from invariants.gate.config import Config, ConfigError, load_config
from invariants.gate.ledger import LedgerError
from invariants.gate.pipeline import RunStats, check
from invariants.gate.result import CheckOptions, CheckResult, RequestCheck, SessionSummary
from invariants.gate.result_cache import ResultCache
from invariants.model.findings import Finding
from invariants.model.version import __version__

__all__ = [
    "BaselineError",
    "CheckOptions",
    "CheckResult",
    "Config",
    "ConfigError",
    "Finding",
    "LedgerError",
    "RequestCheck",
    "ResultCache",
    "RunStats",
    "SessionSummary",
    "__version__",
    "check",
    "load_config",
]
