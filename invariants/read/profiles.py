"""Format profiles: which rules of which era a log is judged by.

The header ``version`` is 0 in every era, so the era is sniffed from shapes
(LOG-FORMAT.md §9).  A profile bundles everything that differs: surface
types, message projection, header reasons, whether deltas are legal, which
request equation holds (boundary derivation vs whole-log-at-dispatch), and
the event-contract variant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

SEED_SURFACE = frozenset({"user/message", "assistant/message", "tool/result", "context/message", "steering/message"})
HEAD_SURFACE = frozenset({"user/message", "assistant/message", "tool/result"})
# HEAD still reads a stored steering/message: its loader migrates it to a user/message.
HEAD_READ_SURFACE = HEAD_SURFACE | {"steering/message"}


@dataclass(slots=True, frozen=True)
class Profile:
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
    prefix_per_step: bool = False  # 17bd71e530: prefix/suffix came from a per-step waterfall
    head_contract: bool = False  # HEAD invariant.ts event rules, KNOWN_SESSION_EVENT_TYPES, legacy-shape migration

    def __reduce__(self) -> tuple[Callable[[str], Profile], tuple[str]]:
        # Pickle by name: checkpoints and worker processes share the table.
        return (_profile_named, (self.name,))


def _profile_named(name: str) -> "Profile":
    return PROFILES[name]


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="seed",
            era="seed",
            description=(
                "seed era (a7b569850b..d060c0dd4f): deltas, tagged context/steering, prefix ++ derive(<step/start)"
            ),
            surface_types=SEED_SURFACE,
            projection="seed",
            reasons=frozenset({"initial", "resume", "fallback"}),
            deltas_allowed=True,
            request_rule="boundary",
            turn_enclosure=True,
            unknown_types_need_ignorable=False,
            config_keys=("model", "temperature", "maxTokens"),
        ),
        Profile(
            name="seed-suffix",
            era="seed",
            description="seed era, 17bd71e530 shape: per-step messagePrefix/messageSuffix via agent/request-messages",
            surface_types=SEED_SURFACE,
            projection="seed",
            reasons=frozenset({"initial", "resume", "fallback"}),
            deltas_allowed=True,
            request_rule="boundary",
            turn_enclosure=True,
            unknown_types_need_ignorable=False,
            config_keys=("model", "temperature", "maxTokens"),
            prefix_per_step=True,
        ),
        Profile(
            name="late-early",
            era="late",
            description=(
                "late era 1123e946c0..f593ef5ab5: snapshots only, reason change, context/steering still wrapped in tags"
            ),
            surface_types=SEED_SURFACE,
            projection="late-early",
            reasons=frozenset({"initial", "resume", "change"}),
            deltas_allowed=False,
            request_rule="boundary",
            turn_enclosure=True,
            unknown_types_need_ignorable=False,
            config_keys=("model", "temperature", "maxTokens", "provider", "reasoningEffort"),
        ),
        Profile(
            name="late-unwrapped",
            era="late",
            description=(
                "late era f593ef5ab5..6816e8a3d5: context and steering projected without tags, plain message "
                "payloads, derive(<step/start)"
            ),
            surface_types=SEED_SURFACE,
            projection="late-unwrapped",
            reasons=frozenset({"initial", "resume", "change"}),
            deltas_allowed=False,
            request_rule="boundary",
            turn_enclosure=True,
            unknown_types_need_ignorable=False,
            config_keys=("model", "temperature", "maxTokens", "provider", "reasoningEffort"),
        ),
        Profile(
            name="head",
            era="late",
            description=(
                "late era 6816e8a3d5..HEAD 611615650f: identified message objects (older late shapes read as HEAD "
                "migrates them), no prefix, derive(log at dispatch), HEAD invariant.ts contract, unknown types "
                "need ignorable"
            ),
            surface_types=HEAD_READ_SURFACE,
            projection="head",
            reasons=frozenset({"initial", "resume", "change"}),
            deltas_allowed=False,
            request_rule="dispatch",
            turn_enclosure=False,
            unknown_types_need_ignorable=True,
            config_keys=("model", "temperature", "maxTokens", "provider", "reasoningEffort"),
            head_contract=True,
        ),
        Profile(
            name="undetermined",
            era="undetermined",
            description="no era-specific shape in the whole log (a header-only log, a chunk-only replay script): "
            "judged by the seed profile's rules",
            surface_types=SEED_SURFACE,
            projection="seed",
            reasons=frozenset({"initial", "resume", "fallback"}),
            deltas_allowed=True,
            request_rule="boundary",
            turn_enclosure=True,
            unknown_types_need_ignorable=False,
            config_keys=("model", "temperature", "maxTokens"),
        ),
    )
}

DEFAULT_PROFILE = "seed"
