"""Pure library behind the inspector: load dsh session logs, fold request
headers, derive messages, rebuild every request and check it.

Nothing in this package imports Textual, sqlite-utils or the CLI, so a CI job
that only runs ``inspector check`` pays for none of them.
"""

from invariants.model.version import __version__

__all__ = ["__version__"]
