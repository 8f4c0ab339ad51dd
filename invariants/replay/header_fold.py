"""The header fold, with the codec and prefix rules checked as it goes.

Folding follows ``foldRequestHeader``: a snapshot replaces the state with its
canonical form, a delta amends it.  Every snapshot with reason ``initial`` or
``resume`` starts a loop instance; the session prefix is composed once per
instance, so it may only change at those anchors (drift, a warning) and
never inside an instance (instability, an error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from invariants.model.jsonvalue import MISSING, first_difference, get_path, js_equal, shorten
from invariants.model.records import Event
from invariants.read.profiles import Profile
from invariants.replay.header_codec import (
    DELTA_ARMS,
    HeaderShapeError,
    apply_delta,
    canonical,
    changed_fields,
    diff_header,
    header_equals,
    non_canonical_fields,
    unknown_delta_keys,
)
from invariants.replay.header_versions import LiveHeader, VersionStore, fast_delta

ANCHORS = ("initial", "resume")
FAST_DELTAS = True  # deltas on a LiveHeader; False applies every delta to whole headers (the reference, for tests)
# HEAD canonicalHeader keeps only these (request-header.ts @ 611615650f).
HEAD_HEADER_KEYS = ("config", "adapterDefaults", "system", "tools")
ADAPTER_DEFAULT_KEYS = ("reasoningEffort", "maxTokens")


def head_header_problem(header: Any) -> str | None:
    """Why HEAD's seed/load boundary rejects this snapshot (``assertCurrentLlmShape``), or None."""
    config = header.get("config") if isinstance(header, dict) else None
    if not isinstance(config, dict):
        return None  # reported as a shape error by canonical()
    for key in ("provider", "model"):
        value = config.get(key)
        if not isinstance(value, str) or not value:
            return f"config lacks a non-empty {key} (HEAD refuses such a header)"
    effort = config.get("reasoningEffort", MISSING)
    if effort is not MISSING and (not isinstance(effort, str) or not effort):
        return "config.reasoningEffort is not a non-empty string"
    defaults = header.get("adapterDefaults", MISSING)
    if defaults is not MISSING:
        if not isinstance(defaults, dict):
            return "adapterDefaults is not an object"
        bad = [k for k in defaults if k not in ADAPTER_DEFAULT_KEYS]
        if bad:
            return f"adapterDefaults has unknown marker(s) {', '.join(bad)}"
        if any(v is not True for v in defaults.values()):
            return "adapterDefaults markers must be true"
        for k in ADAPTER_DEFAULT_KEYS:
            if defaults.get(k) is True and k not in config:
                return f"adapterDefaults.{k} marks a config.{k} that is absent"
    return None


@dataclass(slots=True)
class HeaderVersion:
    """The header in force from ``seq`` on, and the event that made it.

    ``header`` is materialised on demand from the fold's :class:`VersionStore`
    (a version made by a delta keeps only the delta).
    """

    seq: int
    line: int
    kind: str  # initial | resume | fallback | change | delta | <other reason>
    instance: int
    changed: list[str] = field(default_factory=list)  # fields that differ from the previous version
    arms: list[str] = field(default_factory=list)  # delta arms present
    store: VersionStore | None = None
    index: int = -1  # this version's place in the store
    # Index (into the fold's versions) of the version whose event last set each part: a header field
    # (``system``, ``tools``, ``messagePrefix``...) or a config field as ``config.<name>``.
    set_by: dict[str, int] = field(default_factory=dict)

    @property
    def header(self) -> dict:
        assert self.store is not None
        return self.store.header(self.index)

    @property
    def event(self) -> str:
        """The type of the event that made this version."""
        return "request/header-delta" if self.kind == "delta" else "request/header"


@dataclass(slots=True)
class Instance:
    """One loop instance: from its anchor snapshot to the next one."""

    index: int
    seq: int
    line: int
    reason: str
    header: dict
    drift: list[str] = field(default_factory=list)  # fields that differ from the fold before the anchor
    first_step: int | None = None  # index into the session's steps


def prefix_of(header: dict | None) -> list:
    if header is None:
        return []
    value = header.get("messagePrefix", [])
    return value if isinstance(value, list) else [value]


class HeaderFold:
    def __init__(self, profile: Profile, emit: Callable[..., object]) -> None:
        self.profile = profile
        self.emit = emit
        # The header in force: a LiveHeader in the regular case (a delta costs what it changes), else a dict.
        self.state: LiveHeader | dict | None = None
        self.store = VersionStore()
        self.versions: list[HeaderVersion] = []
        self._config: Any = None  # the config of the version in force, for ``set_by``
        self.instances: list[Instance] = []
        self.expect_anchor = True
        # Instability is only observable once the instance has sent a request
        # with the old prefix; a change before that is the anchor completing.
        self.dispatched_in_instance = False
        self._seq_cache: list[int] = []  # seqs of ``versions``, rebuilt when versions grow

    def _err(self, code: str, ev: Event, message: str, where: dict, **extra: Any) -> None:
        self.emit(code, message, seq=ev.seq, line=ev.line, **where, **extra)

    def observe(self, ev: Event, where: dict) -> None:
        if ev.type == "request/header":
            self._snapshot(ev, where)
        elif ev.type == "request/header-delta":
            self._delta(ev, where)

    # -- snapshots -----------------------------------------------------------
    def _snapshot(self, ev: Event, where: dict) -> None:
        d = ev.data
        if not isinstance(d, dict):
            self._err("HDR006", ev, "request/header data is not an object", where)
            return
        reason = d.get("reason")
        try:
            header = canonical(d.get("header", MISSING))
        except HeaderShapeError as exc:
            self._err("HDR006", ev, f"request/header snapshot: {exc}", where)
            return
        dropped = non_canonical_fields(d["header"])
        if dropped:
            self._err(
                "HDR005",
                ev,
                f"snapshot carries empty field(s) {', '.join(dropped)} that canonical form drops",
                where,
                detail={"fields": dropped},
            )
        if self.profile.head_contract:
            problem = head_header_problem(d["header"])
            if problem:
                self._err("HDR006", ev, f"request/header snapshot: {problem}", where)
            # HEAD's canonicalHeader keeps config, adapterDefaults, system and tools only.
            header = {k: v for k, v in header.items() if k in HEAD_HEADER_KEYS}
        if not isinstance(reason, str) or reason not in self.profile.reasons:
            self._err(
                "HDR011",
                ev,
                f"request/header reason {shorten(reason, 40)} is not one the {self.profile.name} profile knows "
                f"({', '.join(sorted(self.profile.reasons))})",
                where,
            )
        prev = self.header_in_force()
        late = self.profile.era == "late"
        if reason == "initial" and prev is not None:
            self._err(
                "HDR015" if late else "HDR007",
                ev,
                'reason "initial" on a log that already had a request header (a new instance must anchor with resume)',
                where,
            )
        if reason == "resume" and prev is None:
            self._err(
                "HDR015" if late else "HDR008",
                ev,
                'reason "resume" on a log with no earlier request header (the first anchor must be initial)',
                where,
            )
        changed = changed_fields(prev, header)
        if reason in ANCHORS:
            self.expect_anchor = False
            self.dispatched_in_instance = False
            inst = Instance(len(self.instances), ev.seq, ev.line, reason, header)
            if prev is not None:
                inst.drift = [f for f in changed]
                self._drift(ev, where, prev, header, inst)
            self.instances.append(inst)
        else:
            if self.expect_anchor:
                self._err(
                    "HDR009",
                    ev,
                    f"the loop instance's first header event is a {shorten(reason, 30)} snapshot, not initial/resume",
                    where,
                )
                self.expect_anchor = False
            if prev is not None and "messagePrefix" in changed:
                self._prefix_changed(ev, where, prefix_of(prev), prefix_of(header), f"{reason} snapshot")
            if reason == "fallback" and prev is not None:
                self._err(
                    "HDR014",
                    ev,
                    "fallback snapshot: the delta encoding could not express this change to "
                    f"{', '.join(changed) or 'nothing'}",
                    where,
                    detail={"changed": changed},
                )
                delta = diff_header(prev, header)
                if delta is not None:
                    try:
                        ok = header_equals(apply_delta(prev, delta).header, header)
                    except HeaderShapeError:
                        ok = False
                    if ok:
                        self._err(
                            "HDR013",
                            ev,
                            "fallback snapshot whose change a round-tripping delta could express",
                            where,
                            detail={"delta_arms": sorted(delta)},
                        )
        self._push(ev, header, reason if isinstance(reason, str) else "snapshot", changed)

    def header_in_force(self) -> dict | None:
        """The folded header after the events seen so far, as a dict (None before any snapshot)."""
        state = self.state
        return state.header() if isinstance(state, LiveHeader) else state

    def _drift(self, ev: Event, where: dict, prev: dict, header: dict, inst: Instance) -> None:
        if "messagePrefix" in inst.drift:
            old, new = prefix_of(prev), prefix_of(header)
            path = first_difference(old, new, "messagePrefix")
            self._err(
                "PFX002",
                ev,
                f"messagePrefix drifted at this resume (first difference at {path}): requests before seq {ev.seq} "
                "start with the old prefix, later ones with the new",
                where,
                path=path,
                detail={
                    "previous_instance": len(self.instances) - 1,
                    "old": shorten(get_path({"messagePrefix": old}, path), 200),
                    "new": shorten(get_path({"messagePrefix": new}, path), 200),
                    "old_length": len(old),
                    "new_length": len(new),
                },
            )
        other = [f for f in inst.drift if f != "messagePrefix"]
        if other:
            self._err("PFX003", ev, f"{', '.join(other)} changed at this resume", where, detail={"fields": other})

    def _prefix_changed(self, ev: Event, where: dict, old: list, new: list, how: str) -> None:
        if not self.dispatched_in_instance or self.profile.prefix_per_step:
            return
        path = first_difference(old, new, "messagePrefix")
        anchor = self.instances[-1].seq if self.instances else None
        self._err(
            "PFX001",
            ev,
            f"messagePrefix changed inside the loop instance anchored at seq {anchor} (by a {how}); the prefix is "
            "composed once per instance",
            where,
            path=path,
            detail={"instance_anchor_seq": anchor},
        )

    # -- deltas ----------------------------------------------------------------
    def _delta(self, ev: Event, where: dict) -> None:
        d = ev.data
        if not self.profile.deltas_allowed:
            self._err(
                "HDR012",
                ev,
                "request/header-delta in a late-era log (the harness rejects it as the unsupported legacy format)",
                where,
            )
        if self.state is None:
            self._err(
                "HDR001",
                ev,
                "request/header-delta before any request/header snapshot: the fold is undefined here",
                where,
            )
            return
        if self.expect_anchor:
            self._err(
                "HDR009", ev, "the loop instance's first header event is a delta, not an initial/resume snapshot", where
            )
            self.expect_anchor = False
        unknown = unknown_delta_keys(d)
        if unknown:
            self._err(
                "HDR006",
                ev,
                f"delta has unknown arm(s) {', '.join(k[:60] for k in unknown[:5])}"
                f" (a delta's arms: {', '.join(DELTA_ARMS)})",
                where,
            )
        if isinstance(d, dict) and not any(k in d for k in DELTA_ARMS):
            self._err("HDR004", ev, "empty delta: it names no arm", where)
            return
        arms = [k for k in DELTA_ARMS if k in d]
        live = self.state if isinstance(self.state, LiveHeader) and FAST_DELTAS else None
        fast = fast_delta(live, d) if live is not None else None
        if live is None or fast is None:
            self._general_delta(ev, where, d, arms)
            return
        for arm, problem in fast.problems:
            self._err("HDR002", ev, f"{arm} arm does not apply cleanly: {problem}", where, path=arm)
        if fast.equal:
            self._err("HDR004", ev, "delta changes nothing: the header after it equals the header before", where)
        elif not fast.problems:
            self._check_round_trip(ev, where, d, fast.redo())
        if "messagePrefix" in fast.changed:
            self._prefix_changed(ev, where, prefix_of(live.fields), prefix_of(fast.new_fields), "delta")
        fast.commit()
        index = len(self.versions)
        self.store.keep_delta(index, d, live)
        self._add_version(ev, "delta", fast.changed, arms, index, live.fields.get("config"))

    def _general_delta(self, ev: Event, where: dict, d: Any, arms: list[str]) -> None:
        """A delta the live header cannot take: the codec's functions, over whole headers."""
        prev = self.header_in_force()
        assert prev is not None
        try:
            result = apply_delta(prev, d)
        except HeaderShapeError as exc:
            self._err("HDR006", ev, f"delta: {exc}", where)
            return
        for arm, problem in result.problems:
            self._err("HDR002", ev, f"{arm} arm does not apply cleanly: {problem}", where, path=arm)
        new = result.header
        if not result.opaque:
            if header_equals(prev, new):
                self._err("HDR004", ev, "delta changes nothing: the header after it equals the header before", where)
            elif not result.problems:
                self._check_round_trip(ev, where, d, diff_header(prev, new) or {})
        changed = changed_fields(prev, new)
        if "messagePrefix" in changed:
            self._prefix_changed(ev, where, prefix_of(prev), prefix_of(new), "delta")
        self._push(ev, new, "delta", changed, arms=arms)

    def _check_round_trip(self, ev: Event, where: dict, d: dict, redo: dict) -> None:
        given = {k: d[k] for k in DELTA_ARMS if k in d}
        path = first_difference(redo, given, "delta")
        if path is not None:
            self._err(
                "HDR003",
                ev,
                f"delta is not what the harness's diff would write (first difference at {path})",
                where,
                path=path,
                detail={
                    "expected": shorten(get_path({"delta": redo}, path), 200),
                    "logged": shorten(get_path({"delta": given}, path), 200),
                },
            )

    def _push(self, ev: Event, header: dict, kind: str, changed: list[str], arms: list[str] | None = None) -> None:
        """A version kept whole (a snapshot, or a delta the codec applied)."""
        live = LiveHeader.of(header)
        self.state = live if live is not None else header
        index = len(self.versions)
        self.store.keep_whole(index, header, live.weight() if live is not None else 0)
        self._add_version(ev, kind, changed, arms or [], index, header.get("config"))

    def _add_version(self, ev: Event, kind: str, changed: list[str], arms: list[str], index: int, config: Any) -> None:
        inst = len(self.instances) - 1
        set_by = _set_by(self.versions[-1] if self.versions else None, index, self._config, config, changed)
        self._config = config
        self.versions.append(HeaderVersion(ev.seq, ev.line, kind, inst, changed, arms, self.store, index, set_by))

    def version_before(self, seq: int) -> HeaderVersion | None:
        """The header version in force over events with seq < ``seq``."""
        import bisect

        k = bisect.bisect_left(self._seqs(), seq)
        return self.versions[k - 1] if k else None

    def _seqs(self) -> list[int]:
        cache = self._seq_cache
        if len(cache) != len(self.versions):
            cache = [v.seq for v in self.versions]
            self._seq_cache = cache
        return cache


def _set_by(prev: HeaderVersion | None, index: int, old: Any, new: Any, changed: list[str]) -> dict[str, int]:
    """Who set each part of version ``index``: the parts it changed are its own, the rest keep the setter
    they had.  A part removed counts as set (to absent) by the event that removed it.  ``old`` and ``new``
    are the config before and after, passed in so that no stored version is materialised."""
    out = dict(prev.set_by) if prev is not None else {}
    for name in changed:
        if name != "config":
            out[name] = index
    if prev is None or "config" in changed:
        old = (old if prev is not None else None) or {}
        new = new or {}
        old, new = (old if isinstance(old, dict) else {}), (new if isinstance(new, dict) else {})
        for key in dict.fromkeys([*old, *new]):
            if prev is None or not js_equal(old.get(key, MISSING), new.get(key, MISSING)):
                out[f"config.{key}"] = index
    return out
