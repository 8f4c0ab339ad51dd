"""Project configuration: what ``inspector check``, the TUI, the index and ``cache-report`` judge findings by.

Read from ``inspector.toml`` (top level) or ``pyproject.toml``
(``[tool.inspector]``), found by walking up from the working directory; in
one folder ``inspector.toml`` wins.  The walk stops at the first folder that
has either file with inspector settings, or at a repository root (``.git``).
``--config FILE`` names the file; ``--isolated`` ignores every file.

Keys (kebab-case; snake_case is accepted too)::

    select = ["LOG", "DIV001", "fork-seed"]   # rule codes, code prefixes or categories
    ignore = ["HDR013"]
    fail-on = "warning"                        # error | warning | info
    profile = "seed"                           # force a format profile
    format = "text"                            # default output format
    jobs = 4                                   # worker processes (0 = one per usable CPU)
    cache = true                               # per-file result cache
    cache-dir = ".inspector_cache"
    baseline = "inspector-baseline.json"       # default for --baseline

    [severity]                                 # (pyproject: [tool.inspector.severity])
    PFX002 = "error"                           # by rule code
    prefix-drift = "info"                      # or by category; a code beats its category

    [per-path-ignores]                         # glob -> rules, against paths relative to the config's folder
    "fixtures/**" = ["FRK003", "log-integrity"]

Precedence: command-line flags over the file over defaults.  A list given
on the command line replaces the file's list (``--select``, ``--ignore``);
``--severity CODE=LEVEL`` overrides the file's table entry by entry.
Unknown keys and unknown rule selectors are usage errors (exit 2), so a
typo cannot silently switch a gate off.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from invariants.model.userfile import read_text

SEVERITY_LEVELS = ("error", "warning", "info")

KNOWN_KEYS = {
    "select",
    "ignore",
    "fail-on",
    "profile",
    "format",
    "jobs",
    "cache",
    "cache-dir",
    "baseline",
    "severity",
    "per-path-ignores",
    "tokens",
    "context-windows",
}


class ConfigError(ValueError):
    """A configuration file or value the tool cannot use (exit 2)."""


@dataclass
class Config:
    """Settings from a file (:func:`load_config`) or made in code; rule selectors are checked either way.

    ``select``, ``ignore``, ``severity``, ``per_path_ignores`` (globs against
    paths relative to ``root``) and ``baseline`` decide which findings are
    reported; ``profile`` how logs are judged; the rest are the command's
    defaults (``fail_on``, ``format``, ``jobs``, ``cache``, ``cache_dir``).
    """

    path: Path | None = None  # the file it came from; None = defaults only
    root: Path = field(default_factory=Path.cwd)  # per-path-ignores are relative to this
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    fail_on: str | None = None
    profile: str | None = None
    format: str | None = None
    jobs: int | None = None
    cache: bool | None = None
    cache_dir: str | None = None
    baseline: str | None = None
    severity: dict[str, str] = field(default_factory=dict)  # selector (code/category/prefix) -> level
    per_path_ignores: dict[str, list[str]] = field(default_factory=dict)
    tokens: bool | None = None  # run the token rules (TOK, CTX) by default
    context_windows: dict[str, int] = field(default_factory=dict)  # "provider/model" or "model" -> tokens

    def __post_init__(self) -> None:
        """Normalise and check what decides the findings, so a typo in code fails as loudly as one in a file."""
        if self.select is not None:
            self.select = validate_selectors(_as_list(self.select), "select")
        self.ignore = validate_selectors(_as_list(self.ignore), "ignore")
        self.severity = parse_severity_table(dict(self.severity), "severity")
        self.per_path_ignores = {
            glob: validate_selectors(_as_list(rules), f"per-path-ignores {glob!r}")
            for glob, rules in self.per_path_ignores.items()
        }
        if self.fail_on is not None and self.fail_on not in SEVERITY_LEVELS:
            raise ConfigError(f"fail-on must be one of {', '.join(SEVERITY_LEVELS)}, not {self.fail_on!r}")


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def find_config(start: Path | None = None) -> Path | None:
    """The nearest ``inspector.toml`` or ``pyproject.toml`` with ``[tool.inspector]``.

    The search is confined: inside a git repository it goes from ``start`` (the working directory) up to
    the repository root (the nearest folder holding ``.git``); outside any repository it looks in ``start``
    alone.  It never climbs into folders the user does not own the meaning of: a stray ``inspector.toml``
    in a shared temporary folder above the logs, or at ``/``, cannot change a gate's verdict.
    """
    here = Path(os.path.realpath(start or Path.cwd()))
    chain = [here, *here.parents]
    top = next((i for i, folder in enumerate(chain) if (folder / ".git").exists()), None)
    for folder in chain[: top + 1] if top is not None else [here]:
        own = folder / "inspector.toml"
        if own.is_file():
            return own
        py = folder / "pyproject.toml"
        if py.is_file() and _has_tool_section(py):
            return py
    return None


# The key ``inspector`` as TOML writes it in a table header, a dotted key or an assignment
# (``[tool.inspector]``, ``tool.inspector.select =``, ``inspector = {...}``), quoted or bare.
_INSPECTOR_KEY = re.compile(r"""(?<![\w-])["']?inspector["']?\s*[\].=]""")


def _has_tool_section(path: Path) -> bool:
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError):
        return False
    if _INSPECTOR_KEY.search(text) is None:
        return False  # no [tool.inspector] table can be written without such a key: tomllib is not imported
    import tomllib  # deferred: most projects have no configuration to parse

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    return isinstance(data.get("tool"), dict) and "inspector" in data["tool"]


def load_config(path: Path | None = None, *, isolated: bool = False, start: Path | None = None) -> Config:
    """The configuration in force: ``path`` if given, else the nearest file, else defaults."""
    if isolated:
        return Config()
    if path is None:
        path = find_config(start)
        if path is None:
            return Config()
    path = Path(path)
    import tomllib  # deferred: only a check with a configuration file parses TOML

    try:
        data = tomllib.loads(read_text(path))
    except FileNotFoundError:
        raise ConfigError(f"{path}: configuration file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("inspector", {}) if isinstance(data.get("tool"), dict) else {}
        where = "[tool.inspector]"
    else:
        tool = data.get("tool")
        table = tool["inspector"] if isinstance(tool, dict) and "inspector" in tool else data
        where = "inspector.toml"
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {where} is not a table")
    return parse_table(table, path, where)


def _norm(key: str) -> str:
    return key.replace("_", "-")


def _str_list(value: Any, key: str, path: Path) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: `{key}` must be a list of strings")
    out: list[str] = []
    for v in value:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def parse_table(table: dict, path: Path, where: str = "") -> Config:
    cfg = Config(path=path, root=path.parent.resolve())
    for raw_key, value in table.items():
        key = _norm(raw_key)
        if key not in KNOWN_KEYS:
            raise ConfigError(
                f"{path}: unknown key `{raw_key}` in {where or 'configuration'} "
                f"(known: {', '.join(sorted(KNOWN_KEYS))})"
            )
        if key == "select":
            cfg.select = validate_selectors(_str_list(value, key, path), f"{path}: select")
        elif key == "ignore":
            cfg.ignore = validate_selectors(_str_list(value, key, path), f"{path}: ignore")
        elif key == "fail-on":
            if value not in SEVERITY_LEVELS:
                raise ConfigError(f"{path}: fail-on must be one of {', '.join(SEVERITY_LEVELS)}, not {value!r}")
            cfg.fail_on = value
        elif key == "profile":
            from invariants.read.profiles import PROFILES

            if value not in PROFILES:
                raise ConfigError(f"{path}: unknown profile {value!r}; known: {', '.join(PROFILES)}")
            cfg.profile = value
        elif key == "format":
            from invariants.gate.formats import FORMATS

            if value not in FORMATS:
                raise ConfigError(f"{path}: format must be one of {', '.join(FORMATS)}, not {value!r}")
            cfg.format = value
        elif key == "jobs":
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"{path}: jobs must be an integer >= 0")
            cfg.jobs = value
        elif key == "cache":
            if not isinstance(value, bool):
                raise ConfigError(f"{path}: cache must be true or false")
            cfg.cache = value
        elif key == "tokens":
            if not isinstance(value, bool):
                raise ConfigError(f"{path}: tokens must be true or false")
            cfg.tokens = value
        elif key == "context-windows":
            if not isinstance(value, dict) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value.values()
            ):
                raise ConfigError(f"{path}: context-windows must be a table of model = tokens (a positive integer)")
            cfg.context_windows = {str(k): v for k, v in value.items()}
        elif key in ("cache-dir", "baseline"):
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{path}: {key} must be a path string")
            resolved = str((cfg.root / value)) if not os.path.isabs(value) else value
            if key == "cache-dir":
                cfg.cache_dir = resolved
            else:
                cfg.baseline = resolved
        elif key == "severity":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: severity must be a table of rule (or category) = level")
            cfg.severity = parse_severity_table({str(k): v for k, v in value.items()}, str(path))
        elif key == "per-path-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: per-path-ignores must be a table of glob = [rules]")
            cfg.per_path_ignores = {
                str(glob): validate_selectors(
                    _str_list(rules, f"per-path-ignores.{glob}", path), f"{path}: per-path-ignores {glob!r}"
                )
                for glob, rules in value.items()
            }
    return cfg


def validate_selectors(selectors: list[str], where: str) -> list[str]:
    """Each selector must name a rule code, a code prefix or a category."""
    from invariants.model.registry import RULES

    categories = {r.category for r in RULES.values()}
    out = []
    for s in selectors:
        up = s.upper()
        if up in RULES:
            out.append(up)
        elif s in categories:
            out.append(s)
        elif up.isalpha() and any(c.startswith(up) for c in RULES):
            out.append(up)
        else:
            raise ConfigError(
                f"{where}: unknown rule selector {s!r} "
                "(a rule code like DIV001, a prefix like DIV, or a category like fork-seed)"
            )
    return out


def parse_severity_table(table: dict[str, Any], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for sel, level in table.items():
        if level not in SEVERITY_LEVELS:
            raise ConfigError(
                f"{where}: severity for {sel!r} must be one of {', '.join(SEVERITY_LEVELS)}, not {level!r}"
            )
        (norm,) = validate_selectors([sel], f"{where}: severity")
        out[norm] = level
    return out
