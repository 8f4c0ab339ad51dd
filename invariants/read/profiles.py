"""Format profiles: which rules of which era a log is judged by.

The header ``version`` is 0 in every era, so the era is sniffed from shapes
(LOG-FORMAT.md §9).  A profile bundles everything that differs: surface
types, message projection, header reasons, whether deltas are legal, which
request equation holds (boundary derivation vs whole-log-at-dispatch), and
the event-contract variant.
"""

from __future__ import annotations

from typing import Callable

from invariants.model.record import FrozenRecord

SEED_SURFACE = frozenset({"user/message", "assistant/message", "tool/result", "context/message", "steering/message"})
HEAD_SURFACE = frozenset({"user/message", "assistant/message", "tool/result"})
# HEAD still reads a stored steering/message: its loader migrates it to a user/message.
HEAD_READ_SURFACE = HEAD_SURFACE | {"steering/message"}


class Profile(FrozenRecord):
    name: str
    era: str  # "seed" | "late" | "undetermined" (no era-specific shape: the seed rules)
    description: str
    surface_types: frozenset[str]
    projection: str  # a key of invariants.replay.derive.PROJECTIONS
    reasons: frozenset[str]
    deltas_allowed: bool
    request_rule: str  # "boundary": derive(events < step/start); "dispatch": derive(events < logLength)
    turn_enclosure: bool  # every unknown event must be inside a turn
    unknown_types_need_ignorable: bool
    config_keys: tuple[str, ...]
    prefix_per_step: bool  # 17bd71e530: prefix/suffix came from a per-step waterfall
    head_contract: bool  # HEAD invariant.ts event rules, KNOWN_SESSION_EVENT_TYPES, legacy-shape migration
    __slots__ = (
        "name",
        "era",
        "description",
        "surface_types",
        "projection",
        "reasons",
        "deltas_allowed",
        "request_rule",
        "turn_enclosure",
        "unknown_types_need_ignorable",
        "config_keys",
        "prefix_per_step",
        "head_contract",
    )

    def __init__(
        self,
        name: str,
        era: str,
        description: str,
        surface_types: frozenset[str],
        projection: str,
        reasons: frozenset[str],
        deltas_allowed: bool,
        request_rule: str,
        turn_enclosure: bool,
        unknown_types_need_ignorable: bool,
        config_keys: tuple[str, ...],
        prefix_per_step: bool = False,
        head_contract: bool = False,
    ) -> None:
        self._init(
            name,
            era,
            description,
            surface_types,
            projection,
            reasons,
            deltas_allowed,
            request_rule,
            turn_enclosure,
            unknown_types_need_ignorable,
            config_keys,
            prefix_per_step,
            head_contract,
        )

    def __reduce__(self) -> tuple[Callable[[str], Profile], tuple[str]]:
        # Pickle by name: checkpoints and worker processes share the table.
        return (_profile_named, (self.name,))


def _profile_named(name: str) -> "Profile":
    return PROFILES[name]


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "seed",
            "seed",
            "seed era (a7b569850b..d060c0dd4f): deltas, tagged context/steering, prefix ++ derive(<step/start)",
            SEED_SURFACE,
            "seed",
            frozenset({"initial", "resume", "fallback"}),
            True,
            "boundary",
            True,
            False,
            ("model", "temperature", "maxTokens"),
        ),
        Profile(
            "seed-suffix",
            "seed",
            "seed era, 17bd71e530 shape: per-step messagePrefix/messageSuffix via agent/request-messages",
            SEED_SURFACE,
            "seed",
            frozenset({"initial", "resume", "fallback"}),
            True,
            "boundary",
            True,
            False,
            ("model", "temperature", "maxTokens"),
            prefix_per_step=True,
        ),
        Profile(
            "late-early",
            "late",
            "late era 1123e946c0..f593ef5ab5: snapshots only, reason change, context/steering still wrapped in tags",
            SEED_SURFACE,
            "late-early",
            frozenset({"initial", "resume", "change"}),
            False,
            "boundary",
            True,
            False,
            ("model", "temperature", "maxTokens", "provider", "reasoningEffort"),
        ),
        Profile(
            "late-unwrapped",
            "late",
            "late era f593ef5ab5..6816e8a3d5: context and steering projected without tags, plain message payloads, "
            "derive(<step/start)",
            SEED_SURFACE,
            "late-unwrapped",
            frozenset({"initial", "resume", "change"}),
            False,
            "boundary",
            True,
            False,
            ("model", "temperature", "maxTokens", "provider", "reasoningEffort"),
        ),
        Profile(
            "head",
            "late",
            "late era 6816e8a3d5..HEAD 611615650f: identified message objects (older late shapes read as HEAD migrates "
            "them), no prefix, derive(log at dispatch), HEAD invariant.ts contract, unknown types need ignorable",
            HEAD_READ_SURFACE,
            "head",
            frozenset({"initial", "resume", "change"}),
            False,
            "dispatch",
            False,
            True,
            ("model", "temperature", "maxTokens", "provider", "reasoningEffort"),
            head_contract=True,
        ),
        Profile(
            "undetermined",
            "undetermined",
            "no era-specific shape in the whole log (a header-only log, a chunk-only replay script): "
            "judged by the seed profile's rules",
            SEED_SURFACE,
            "seed",
            frozenset({"initial", "resume", "fallback"}),
            True,
            "boundary",
            True,
            False,
            ("model", "temperature", "maxTokens"),
        ),
    )
}

DEFAULT_PROFILE = "seed"
