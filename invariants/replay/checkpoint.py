"""A replay's checkpoint: the fold state pickled at a clean end of file, resumed over what a log grew by."""

from __future__ import annotations

from typing import Any

from invariants.read.era import profile_for
from invariants.read.source import LogSource
from invariants.replay.fold import CHECKPOINT_FORMAT, _Replay, _Sink
from invariants.replay.model import SessionModel

# What a checkpoint may name.  A checkpoint comes back from an index file, which
# may not be ours: pickle calls whatever a stream names, so only the fold's own
# classes are allowed, and ``getattr`` only fetches the findings sink's two emitters.
_CHECKPOINT_MODULES = (
    "invariants.replay.fold",
    "invariants.replay.model",
    "invariants.model.records",
    "invariants.model.findings",
    "invariants.replay.surface",
    "invariants.replay.derive",
    "invariants.read.load",
    "invariants.read.source",
    "invariants.replay.header_fold",
    "invariants.replay.header_versions",
    "invariants.rules.contract",
    "invariants.rules.values",
    "invariants.read.line_records",
)


def _handler(obj: Any, name: str) -> Any:
    """The only bound methods a fold holds: its findings sink's emitters."""
    if type(obj) is _Sink and name in ("emit", "fold_emit"):
        return getattr(obj, name)
    raise ValueError(f"a checkpoint may not fetch {name!r}")


def _load_checkpoint(checkpoint: bytes) -> Any:
    import importlib
    import io
    import pathlib
    import pickle
    import zlib

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if (module, name) == ("builtins", "getattr"):
                return _handler
            if module in ("pathlib", "pathlib._local") and name in ("PosixPath", "WindowsPath"):
                return getattr(pathlib, name)  # Python 3.13 pickles them as pathlib._local's: either reads
            if (module, name) == ("invariants.read.profiles", "_profile_named"):
                return super().find_class(module, name)
            if module in _CHECKPOINT_MODULES:
                obj = getattr(importlib.import_module(module), name, None)
                if isinstance(obj, type) and obj.__module__ == module:
                    return obj
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a checkpoint")

    z = zlib.decompressobj()
    data = z.decompress(checkpoint, max(64 << 20, 100 * len(checkpoint)))  # a zlib bomb stops here
    if z.unconsumed_tail:
        raise ValueError("checkpoint expands too far")
    return Unpickler(io.BytesIO(data)).load()


def resume(source: LogSource, checkpoint: bytes) -> SessionModel | None:
    """Continue a replay from ``model.checkpoint`` over the bytes appended since.

    Returns None when the checkpoint does not fit this file (shorter than the
    recorded position, unreadable state, or a stream that names anything but
    the fold's own classes), or when what was appended changes the era verdict
    (another profile, or a mix of eras): the caller then replays from scratch.
    """
    try:
        state = _load_checkpoint(checkpoint)
    except Exception:
        return None
    if not isinstance(state, _Replay) or not state.judged:
        return None
    if getattr(state, "checkpoint_format", None) != CHECKPOINT_FORMAT:
        return None  # written by a version whose state had other fields (an index outlives the code)
    reader = state.reader
    try:
        size = source.path.stat().st_size
    except OSError:
        return None
    if reader._start[0] > size:
        return None
    before = profile_for(dict(state.seen)) if state.sniffing else None
    reader.source = source
    reader.file = source.display
    state.model = SessionModel(
        source, reader.header, state.profile, state.evidence, state.steps, state.fold, state.surface, state.findings
    )
    counts = getattr(state, "model_counts", None)
    if counts is not None:
        state.model.turns, state.model.compactions, state.model.end_seed_seqs, state.model.contexts = (
            counts[0],
            list(counts[1]),
            list(counts[2]),
            list(counts[3]) if len(counts) > 3 else [],
        )
    model = state.run()
    if before is not None:
        after = state.verdict()
        if (after.profile, after.conflicts) != (before.profile, before.conflicts):
            return None
        model.era_evidence = after.evidence
    return model
