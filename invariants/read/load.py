"""Turn a log file into its session header and a stream of events.

Integrity problems become findings on the way (file, line, seq), never
exceptions: an unparsable line, a bad envelope, a seq gap, a malformed chunk
row, a torn tail, a broken zstd frame.  A defect is only a *torn tail* when no
committed ``turn/end`` follows it (the harness cuts such tails and repairs the
open turn); a defect with a ``turn/end`` after it makes the log corrupt, as
the harness's loader says.  Events are yielded one at a time and chunk
payloads are not kept, so memory does not grow with the number of chunks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import orjson

from invariants.model.findings import Finding
from invariants.model.jsonvalue import MAX_DEPTH, is_safe_int, shorten, too_deep
from invariants.model.records import Event, SessionHeader
from invariants.model.registry import make_finding, rules_where
from invariants.read.chunk_run import ChunkRun
from invariants.read.envelope import (
    MAX_SAFE,
    ROW_TYPES,
    envelope_problem,
    event_from,
    header_problem,
    is_binary,
    is_envelope,
    parse_json,
    plain_envelope,
)
from invariants.read.line_records import DEFAULT_MAX_LINE, FrameProblem, LineRun, RawLine, RowProblem
from invariants.read.lines import iter_source_lines
from invariants.read.projected import PROJECTED, RUNTIME, Mixed, Projection, line_form, rebuild_value
from invariants.read.rows_fast import expand_row_fast
from invariants.read.source import LogSource, local_size, strip_log_suffix

if TYPE_CHECKING:
    pass

TYPED_AFTER = 8192
"""Chunk lines a reader sees in runs before it decodes runs typed: importing msgspec
costs about what typed decoding saves on that many lines."""
TYPED_LINE_BYTES = 512
"""A local file of at least ``TYPED_AFTER`` lines this long is sure to get there: it is
decoded typed from its first run, not after parsing ``TYPED_AFTER`` chunk lines the slow way."""


class _ReadState:
    __slots__ = ("start_offset", "start_line", "expected_seq", "bad_since_good", "defects", "held", "skipped")

    def __init__(self, start_offset: int, start_line: int, expected_seq: int) -> None:
        self.start_offset, self.start_line, self.expected_seq = start_offset, start_line, expected_seq
        self.bad_since_good = 0
        self.defects: list[_Defect] = []
        self.held: _Held | None = None  # an event whose seq jumps ahead, until the next line says which is wrong
        self.skipped: _Skipped | None = None  # the run of events skipped for a seq that does not increase


@dataclass(slots=True)
class _Held:
    obj: dict
    line: int
    offset: int
    due: int  # the seq its position calls for


@dataclass(slots=True)
class _Skipped:
    finding: Finding
    first: int
    expected: int
    count: int = 1


@dataclass(slots=True)
class _Defect:
    """A defect held until a committed turn/end (or the end of the log) says what it is; a run of
    damaged lines is one defect (``last``: its last line, 0 until a second joins; ``count``: how many lines)."""

    code: str
    line: int
    seq: int | None
    message: str
    last: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        self.last = self.last or self.line

    def text(self) -> str:
        if self.count == 1:
            return self.message
        return f"{self.message}; {self.count} damaged lines, lines {self.line}..{self.last}"


DAMAGE = frozenset(rules_where(unreadable_line=True))
"""Defects of a line that cannot be read as an event: a run of them is one finding."""
MAX_PENDING = 256
"""Defects held at once: past it, damage is merged into the last one, so memory and output stay bounded
however the damage is spread."""


class _AllReaders:
    """Chunk lines every reader of this process has seen in runs: once past ``TYPED_AFTER`` the
    import has paid for itself, so a run of many small logs decodes typed too (a reader of one
    small log never gets there on its own).  Typed decoding decides nothing differently."""

    run_lines = 0


class LogReader:
    """Read one log: ``header`` is set once iteration starts; ``findings`` grows."""

    def __init__(self, source: LogSource | Path | str, max_line: int = DEFAULT_MAX_LINE):
        if not isinstance(source, LogSource):
            p = Path(source)
            source = LogSource(p, p.parent)
        self.source = source
        self.file = source.display
        self.max_line = max_line
        self.header: SessionHeader | None = None
        self.findings: list[Finding] = []
        self.lines = 0
        self.events = 0
        self.chunks = 0
        self.chunk_rows = 0
        self.bytes = 0
        self.ended_torn = False
        self.frame_problem: FrameProblem | None = None
        # Where a later read may resume: (byte offset, lines, next seq), set
        # only when the file ended on a complete line with no pending defect.
        self.resume_point: tuple[int, int, int] | None = None
        self._start: tuple[int, int, int] = (0, 0, 0)
        self._run_lines = 0  # chunk lines seen in runs: typed decoding starts at TYPED_AFTER
        # The log's form (see invariants.read.projected): decided by its first body line that is an
        # event object; a projected snapshot has its envelopes rebuilt by ``_projection``.
        self.form = RUNTIME
        self._form_decided = False
        self._projection: Projection | None = None
        self._mixed: Mixed | None = None  # body lines of the other form: one finding for the file
        # Body lines that cannot be read as events (complete lines only), for the verdict on the whole log
        self.damaged = 0
        self.damaged_lines: tuple[int, int] | None = None  # the first and last of them
        self.foreign_lines = 0  # of them, JSON that is not an event envelope
        self.binary = False  # one of them is not text (a NUL byte or invalid UTF-8)
        self.header_problem: str | None = None  # why line 1 is not a session header
        self.header_damaged = False  # line 1 is not JSON at all

    # -- reporting ---------------------------------------------------------
    def _emit(self, code: str, message: str, **where: Any) -> None:
        sid = self.header.id if self.header else None
        self.findings.append(make_finding(code, message, file=self.file, session=sid, **where))

    def _flush_defects(self, defects: list[_Defect], torn: bool) -> None:
        for d in defects:
            where: dict[str, Any] = {"line": d.line, "seq": d.seq}
            if d.count > 1:
                where["detail"] = {"damaged_lines": d.count, "last_line": d.last}
            if torn:
                self._emit("LOG004", f"crash-truncated tail: {d.text()}", **where)
            else:
                self._emit(d.code, d.text(), **where)
        if torn and defects:
            self.ended_torn = True
        defects.clear()

    # -- reading -----------------------------------------------------------
    def __iter__(self) -> Iterator[Event]:
        for obj, line, offset in self.iter_objects():
            if type(obj) is ChunkRun:
                for i, o in enumerate(obj.objs):
                    yield event_from(o, line + i * obj.line_step, -1)  # a packed row's members share its line
            else:
                yield event_from(obj, line, offset)

    def iter_objects(self) -> Iterator[tuple[Any, int, int]]:
        """Valid event envelopes as ``(object, line, offset)``, seq-checked, rows expanded.

        This is the hot loop of the tool.  Runs of plain chunk lines arrive as
        one :class:`ChunkRun` item (``(run, first line, first offset)``) after a
        single parse and C-level checks; everything else, and any run that does
        not validate as a whole, goes line by line.
        """
        st = _ReadState(*self._start)
        if not self._typed() and self._large():  # (once typed, a log's size no longer matters)
            self._run_lines = TYPED_AFTER
        start_offset = st.start_offset
        first = start_offset == 0
        self.resume_point = None
        last_complete = True
        projection = self._projection
        if projection is not None:
            projection.next_seq = st.expected_seq
        for raw in iter_source_lines(self.source, self.max_line, (start_offset, st.start_line), runs=True):
            kind = type(raw)
            if kind is LineRun:
                n = len(raw.lines)
                self.lines = raw.number + n - 1
                self.bytes = raw.offset + raw.nbytes
                if not first:
                    self._form_decided = True  # chunk lines with their seq: the runtime form, unless decided
                run = (
                    self._batch(raw, st.expected_seq)
                    if not first and st.bad_since_good == 0 and st.held is None and projection is None
                    else None
                )
                if run is not None:
                    st.expected_seq += n
                    self.events += n
                    yield run, raw.number, raw.offset
                    continue
                for line in raw.raw_lines():
                    if first:
                        first = False
                        if self._read_header(line):
                            continue
                    if not self._form_decided:
                        projection = self._decide_form(line, st)
                    if projection is not None:
                        line = self._rebuilt(projection, line)
                    yield from self._line(line, st)
                continue
            if kind is RowProblem:  # a database row that does not decode: a defect at its place
                self.lines = raw.number
                if raw.final:  # an unreadable database: corrupt, whatever follows (nothing can be read)
                    self._emit(raw.code, raw.message, line=raw.number, seq=raw.seq)
                    last_complete = False
                    break
                st.defects.append(_Defect(raw.code, raw.number, raw.seq, raw.message))
                st.bad_since_good += 1
                continue
            if kind is FrameProblem:
                if raw.kind == "skippable":  # every line was read; the harness would refuse the file
                    self._emit("LOG009", f"zstd skippable frame at byte {raw.offset}: {raw.message}", line=None)
                    continue
                self.frame_problem = raw
                if raw.kind == "torn":
                    self._emit(
                        "LOG010",
                        f"file ends inside zstd frame {raw.frame_index} (byte {raw.offset}): {raw.message}",
                        line=self.lines or None,
                    )
                else:
                    self._emit(
                        "LOG009",
                        f"zstd frame {raw.frame_index} at byte {raw.offset}: {raw.message}",
                        line=self.lines or None,
                    )
                last_complete = False
                break
            last_complete = raw.complete
            self.lines = raw.number
            self.bytes = raw.offset + (raw.oversized or len(raw.data)) + raw.complete
            if first:
                first = False
                if self._read_header(raw):
                    continue
            if not self._form_decided:
                projection = self._decide_form(raw, st)
            if projection is not None:
                raw = self._rebuilt(projection, raw)
            ev = self._plain_event(raw, st)
            if ev is not None:
                yield ev, raw.number, raw.offset
                continue
            yield from self._line(raw, st)
        if st.held is not None:
            yield from self._release(st, None)
        if first and self.header is None and self.frame_problem is None:
            self._emit("LOG005", "empty file: no session header line", line=1)
        # Resumable only where a read of the whole log carries nothing over: not after a defect, a torn
        # line, or an event skipped for its seq (a later skip would extend that finding, not start one).
        if (
            not st.defects
            and st.bad_since_good == 0
            and last_complete
            and self.header is not None
            and self.source.resumable
        ):
            self.resume_point = (max(self.bytes, start_offset), self.lines, st.expected_seq)
        self._flush_defects(st.defects, torn=True)
        self._judge_readable()

    def _judge_readable(self) -> None:
        """A log whose body yields no event, or whose lines are mostly unreadable, is not read as a log
        with a damaged tail: its integrity findings become one LOG019 error naming the cause."""
        bad = self.damaged + self.header_damaged
        if not self.damaged and not (self.header_damaged and self.lines > 1):
            return
        if not (self.events == 0 or 2 * bad > self.lines):
            return
        first, last = self.damaged_lines or (1, 1)
        if self.header_damaged:
            first = 1
        if self.binary:
            cause = "binary data, not text"
        elif self.header_problem and "format version" in self.header_problem:
            version = self.header.raw.get("version") if self.header is not None else None
            cause = f"a session header of format version {shorten(version, 40)}, which the harness never wrote"
        elif self.foreign_lines == self.damaged and not self.header_damaged:
            cause = "JSON lines that are not harness events (a foreign format)"
        elif self.header_damaged and self.header_problem:
            cause = f"no session header ({self.header_problem}) and lines that are not events"
        else:
            cause = "lines that are not JSON events"
        what = "no event" if self.events == 0 else f"{self.events} event(s)"
        message = (
            f"not a readable session log: {cause}; {bad} of {self.lines} lines unreadable "
            f"(lines {first}..{last}), {what} read"
        )
        drop = {"LOG001", "LOG002", "LOG004", "LOG005", "LOG008", "LOG012", "LOG019"}
        self.findings[:] = [f for f in self.findings if f.rule not in drop]
        self._emit(
            "LOG019",
            message,
            line=first,
            detail={"unreadable_lines": bad, "lines": self.lines, "first_line": first, "last_line": last},
        )

    def _damage(self, defects: list[_Defect], raw: RawLine, d: _Defect) -> None:
        """Hold the defect of a line that cannot be read as an event: the line after a damaged one
        extends its run, and past MAX_PENDING defects any damage joins the last one."""
        if raw.complete:  # a final fragment without newline is a crash's torn tail, not damage
            self.damaged += 1
            if self.damaged_lines is None:
                self.damaged_lines = (raw.number, raw.number)
            else:
                self.damaged_lines = (self.damaged_lines[0], raw.number)
            if d.code == "LOG002":
                self.foreign_lines += 1
            if not self.binary and is_binary(raw.data):
                self.binary = True
        last = defects[-1] if defects else None
        if last is not None and last.code in DAMAGE and (last.last == d.line - 1 or len(defects) >= MAX_PENDING):
            last.last = d.line
            last.count += 1
            return
        defects.append(d)

    def _decide_form(self, raw: RawLine, st: _ReadState) -> Projection | None:
        """Decide the log's form by this body line when it is an event object; the projection to apply, if any."""
        obj, err = parse_json(raw.data) if not raw.oversized else (None, "oversized")
        form = line_form(obj) if err is None else None  # parse_json refuses a line too deep to parse first
        if form is None:
            return None
        self._form_decided = True
        if form == PROJECTED:
            self.form = PROJECTED
            if self.header is not None:
                self.header.form = PROJECTED
            self._projection = Projection(st.expected_seq + st.bad_since_good)
        return self._projection

    def _rebuilt(self, projection: Projection, raw: RawLine) -> RawLine:
        """A projected log's line with its envelope rebuilt; a line that carries its own is noted as mixed."""
        raw = projection.rebuild(raw)
        if projection.last_form == RUNTIME:
            self._other_form(RUNTIME, raw.number, None)
        return raw

    def _other_form(self, form: str, number: int, seq: int | None) -> None:
        """A body line of the form the log is not in: the log's one finding for it grows."""
        mixed = self._mixed
        if mixed is None:
            self._mixed = mixed = Mixed(form, number)
            mixed.finding = make_finding(
                "LOG018",
                mixed.message(),
                file=self.file,
                session=self.header.id if self.header else None,
                line=number,
                seq=seq,
            )
            self.findings.append(mixed.finding)
            return
        mixed.add(number)
        mixed.finding.message = mixed.message()
        mixed.finding.detail = {"lines": mixed.count, "first_line": mixed.first, "last_line": mixed.last}

    def _typed(self) -> bool:
        """Whether chunk runs decode typed: this log or this process has read ``TYPED_AFTER`` chunk lines."""
        return self._run_lines >= TYPED_AFTER or _AllReaders.run_lines >= TYPED_AFTER

    def _large(self) -> bool:
        """Whether the log is a local file of at least ``TYPED_AFTER * TYPED_LINE_BYTES`` bytes."""
        return self.source.member is None and local_size(self.source.path) >= TYPED_AFTER * TYPED_LINE_BYTES

    def _batch(self, raw: LineRun, expected_seq: int) -> ChunkRun | None:
        """Parse and validate a run of chunk lines at once, or None to go line by line."""
        lines = raw.lines
        # Only a line longer than MAX_DEPTH bytes can be nested deeper than MAX_DEPTH.
        if any(map(too_deep, [line for line in lines if len(line) > MAX_DEPTH])):
            return None  # line by line: the deep line becomes a defect
        if self._typed():
            from invariants.read.chunk_typed import decode_run

            text = raw.text if raw.text is not None else b"\n".join(lines)
            typed = decode_run(text, expected_seq, len(lines))
            if typed is not None:
                return ChunkRun(None, None, 1, lines, typed)
        self._run_lines += len(lines)
        _AllReaders.run_lines += len(lines)
        try:
            objs = orjson.loads(b"[" + b",".join(lines) + b"]")
            seqs = [o["seq"] for o in objs]
            times = [o["time"] for o in objs]
            datas = [o["data"] for o in objs]
            types = {o["type"] for o in objs}  # a duplicate "type" key after seq: the last one counts
        except (orjson.JSONDecodeError, TypeError, KeyError):
            return None
        n = len(objs)
        if (
            types != {"assistant/chunk"}
            or set(map(len, objs)) != {4}
            or set(map(type, seqs)) != {int}
            or seqs[0] != expected_seq
            or seqs[-1] != expected_seq + n - 1
            or seqs != list(range(expected_seq, expected_seq + n))
            or set(map(type, times)) != {int}
            or min(times) < -MAX_SAFE
            or max(times) > MAX_SAFE
            or seqs[-1] > MAX_SAFE
        ):
            return None
        return ChunkRun(objs, datas, 1, raw.lines)

    def _plain_event(self, raw: RawLine, st: "_ReadState") -> dict | None:
        """The event of a line that is the common case, taken as :meth:`_line` takes it (a
        complete line, one valid envelope, the seq due, nothing held), else None with nothing
        changed, for :meth:`_line` to read it.  No generator per line on the hot path."""
        if raw.oversized or not raw.complete or st.held is not None:
            return None
        obj = plain_envelope(raw.data, st.expected_seq)
        return None if obj is None else self._take(obj, st)

    def _line(self, raw: RawLine, st: "_ReadState") -> Iterator[tuple[dict | ChunkRun, int, int]]:
        """Validate one physical line; yields its event(s) or records a defect."""
        number = raw.number
        defects = st.defects
        if raw.oversized:
            self._damage(
                defects,
                raw,
                _Defect(
                    "LOG008",
                    number,
                    st.expected_seq + st.bad_since_good,
                    f"line {number} is {raw.oversized} bytes, over the {self.max_line}-byte limit; not parsed",
                ),
            )
            st.bad_since_good += 1
            return
        try:
            if len(raw.data) > MAX_DEPTH and too_deep(raw.data):
                raise ValueError  # parse_json says why, without parsing
            obj = orjson.loads(raw.data)
        except ValueError:  # orjson.JSONDecodeError is one
            obj, err = parse_json(raw.data)
            if err is not None:
                due = st.expected_seq + st.bad_since_good
                what = "fragment without newline" if not raw.complete else "unparsable line"
                self._damage(
                    defects,
                    raw,
                    _Defect("LOG001", number, due, f"line {number}: {what} ({err}), where seq {due} was due"),
                )
                st.bad_since_good += 1
                return
        if not is_envelope(obj) and self.form == RUNTIME and line_form(obj) == PROJECTED:
            rebuilt = rebuild_value(obj, st.expected_seq + st.bad_since_good)
            if is_envelope(rebuilt) or rebuilt["type"] in ROW_TYPES:
                self._other_form(PROJECTED, number, st.expected_seq + st.bad_since_good)
                obj = rebuilt
        if is_envelope(obj):
            objs: Any = (obj,)
        elif isinstance(obj, dict) and "seq0" in obj and type(obj.get("type")) is str and obj["type"] in ROW_TYPES:
            objs = self._expand_row(obj, raw, defects)
            if objs is None:
                st.bad_since_good += 1
                return
        else:
            problem = envelope_problem(obj) or "malformed event envelope"
            seq = (
                obj.get("seq")
                if isinstance(obj, dict) and is_safe_int(obj.get("seq"))
                else st.expected_seq + st.bad_since_good
            )
            self._damage(defects, raw, _Defect("LOG002", number, seq, f"line {number}: {problem}"))
            st.bad_since_good += 1
            return
        if not raw.complete:
            self._emit(
                "LOG004",
                f"line {number} has no trailing newline: the harness treats the final fragment as torn and drops it",
                line=number,
                seq=objs[-1]["seq"],
            )
            self.ended_torn = True
        elif len(objs) > 1 and not defects and objs[0]["seq"] == st.expected_seq:
            # A packed row: plain delta chunks of one (turn, step), contiguous from the
            # expected seq.  One item for the whole row, all on this physical line.
            st.bad_since_good = 0
            st.expected_seq += len(objs)
            self.events += len(objs)
            yield ChunkRun(objs, [o["data"] for o in objs], 0, row=raw.data), number, raw.offset
            return
        for ev in objs:
            seq = ev["seq"]
            if st.held is not None:
                yield from self._release(st, seq)
            if seq != st.expected_seq:
                if seq < st.expected_seq:
                    self._skip(st, seq, number)
                    continue
                missing = seq - st.expected_seq
                if missing != st.bad_since_good:
                    if len(objs) == 1:  # the next line tells a wrong seq from missing events
                        st.held = _Held(ev, number, raw.offset, st.expected_seq + st.bad_since_good)
                        return
                    defects.append(_gap(number, seq, st.expected_seq))
            yield self._take(ev, st), number, raw.offset

    def _take(self, ev: dict, st: _ReadState, commits: bool = True) -> dict:
        """Accept ``ev``, the one step every accepted event goes through (the plain-line fast path,
        :meth:`_line`, a settled held event): the seq after it is due, and a turn/end commits the
        defects before it (``commits``: False for the line that is itself the defect)."""
        st.bad_since_good = 0
        st.skipped = None
        st.expected_seq = ev["seq"] + 1
        if commits and st.defects and ev["type"] == "turn/end":
            self._flush_defects(st.defects, torn=False)
        self.events += 1
        return ev

    def _release(self, st: _ReadState, next_seq: int | None) -> Iterator[tuple[dict, int, int]]:
        """Settle a held event: a wrong seq when the next line goes on from its due seq, else a gap."""
        held, st.held = st.held, None
        assert held is not None
        seq = held.obj["seq"]
        if next_seq == held.due + 1:
            st.defects.append(
                _Defect(
                    "LOG003",
                    held.line,
                    held.due,
                    f"line {held.line}: seq {seq} where seq {held.due} was due, and the next line goes on at "
                    f"{held.due + 1}: read as seq {held.due}",
                )
            )
            yield self._take({**held.obj, "seq": held.due}, st, commits=False), held.line, held.offset
            return
        st.defects.append(_gap(held.line, seq, st.expected_seq))
        # The line with the wrong seq is the defect: a turn/end there commits nothing after it.
        yield self._take(held.obj, st, commits=False), held.line, held.offset

    def _skip(self, st: _ReadState, seq: int, number: int) -> None:
        """An event whose seq does not increase is skipped; a run of them is one finding."""
        st.bad_since_good += 1  # it holds a place in the log: the seq after it is not a gap
        run = st.skipped
        if run is None:
            f = make_finding(
                "LOG003",
                f"seq {seq} does not increase (expected {st.expected_seq}); event skipped",
                file=self.file,
                session=self.header.id if self.header else None,
                line=number,
                seq=seq,
            )
            self.findings.append(f)
            st.skipped = _Skipped(f, seq, st.expected_seq)
            return
        run.count += 1
        run.finding.message = (
            f"seq {run.first} does not increase (expected {run.expected}); "
            f"{run.count} events skipped, up to seq {seq} on line {number}"
        )
        run.finding.detail = {"skipped_events": run.count, "last_skipped_seq": seq}

    def resume_from(self, point: tuple[int, int, int]) -> None:
        """Continue a later iteration at a recorded :attr:`resume_point`."""
        self._start = point

    def _read_header(self, raw: RawLine) -> bool:
        """Parse line 1 as the session header; True when it was consumed as one."""
        fallback_id = _fallback_id(self.source)
        obj, err = (None, "oversized") if raw.oversized else parse_json(raw.data)
        problem = err and f"first line is not JSON ({err})" or header_problem(obj)
        self.header_problem = problem
        if err is not None and not raw.oversized:
            self.header_damaged = True
            if is_binary(raw.data):
                self.binary = True
        if problem is None and isinstance(obj, dict):  # header_problem accepts only an object
            self.header = SessionHeader(
                id=obj["id"],
                version=obj["version"],
                created_at=obj.get("createdAt"),
                cwd=obj.get("cwd"),
                parent_session=obj.get("parentSession"),
                seed_length=obj.get("seedLength") or 0,
                raw=obj,
                line=1,
            )
            return True
        looks_like_event = isinstance(obj, dict) and isinstance(obj.get("type"), str) and "/" in obj.get("type", "")
        if isinstance(obj, dict) and obj.get("type") == "session" and isinstance(obj.get("id"), str):
            fallback_id = obj["id"]
        self.header = SessionHeader(id=fallback_id, version=None, raw=obj if isinstance(obj, dict) else {}, line=1)
        self._emit("LOG005", f"line 1: {problem}", line=1)
        return not looks_like_event

    def _expand_row(self, obj: dict, raw: RawLine, defects: list[_Defect]) -> list[dict] | None:
        from invariants.read.chunk_rows import ChunkRowError, expand_row

        expanded = expand_row_fast(obj)  # the common valid row, at C speed; None = validate slowly
        if expanded is not None:
            self.chunk_rows += 1
            return expanded
        try:
            expanded = expand_row(obj)
        except ChunkRowError as exc:
            seq = obj.get("seq0") if is_safe_int(obj.get("seq0")) else None
            self._damage(
                defects,
                raw,
                _Defect("LOG012", raw.number, seq, f"line {raw.number}: malformed {obj.get('type')} row: {exc}"),
            )
            return None
        self.chunk_rows += 1
        return expanded


def possible_ids(source: LogSource) -> set[str] | None:
    """Every id a replay may give the session of ``source`` (:attr:`SessionModel.id`): its header's,
    and the ones :meth:`LogReader._read_header` falls back to when the first line is not a header
    (an empty log's is its path's stem).  None when the log cannot be read."""
    ids = {_fallback_id(source), source.path.stem}
    lines = iter_source_lines(source, DEFAULT_MAX_LINE)
    try:
        first = next(lines, None)
    except OSError:
        return None
    finally:
        lines.close()  # type: ignore[attr-defined]  # a generator: its file is closed now
    if isinstance(first, RawLine) and not first.oversized:
        obj, err = parse_json(first.data)
        if err is None and isinstance(obj, dict) and isinstance(obj.get("id"), str):
            ids.add(obj["id"])
    return ids


def _fallback_id(source: LogSource) -> str:
    """The id a session without a readable header goes by: its member, or its file's name less the
    suffix (a harness ``session.jsonl``: its folder's)."""
    fallback = source.member or strip_log_suffix(source.path.name)
    return source.path.parent.name if fallback == "session" else fallback


def _gap(line: int, seq: int, expected: int) -> _Defect:
    return _Defect("LOG003", line, seq, f"seq {seq} follows seq {expected - 1}: {seq - expected} event(s) missing")
