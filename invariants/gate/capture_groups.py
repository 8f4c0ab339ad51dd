"""A folder whose logs have captures beside them, cut into the groups its captures route between.

A capture's lines route by session id to any log of its folder (and a line that names no session
to the log the capture is named after), so a folder with a capture was checked as one unit: a
seed-era project folder (``cwd-<hash>/<id>.jsonl``, ``<id>.requests.jsonl`` beside) of thousands of
sessions held every model until its captures were read, and went to one worker.  Here each capture
is read for what its lines name (:func:`~invariants.read.capture.capture_keys`, the requests left
unparsed) and each log's first line for the ids its session may have
(:func:`~invariants.read.load.possible_ids`); a log and every log a capture beside it may route to,
or whose file name a line hints at, share a unit.  Every routing question a unit asks
(:class:`~invariants.gate.requests.RequestRouter`: by id, the last of an id winning; by the
capture's name; is a hinted file a log this run checks) then has the answer the whole folder
gives, so the report is the same.  Anything not known for certain keeps the folder whole: a
folder ``requests.jsonl`` (its lines may go to any log, and a line without a session id to the
folder's only log), a log or capture that cannot be read, a capture line over the line limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from invariants.gate.requests import hinted_names
from invariants.gate.result_cache import Digest, revision
from invariants.read.capture import capture_keys, find_capture, folder_names
from invariants.read.load import possible_ids
from invariants.read.source import LOG_SUFFIXES, LogPath, LogSource, captures_present, is_folder_capture

if TYPE_CHECKING:
    from invariants.gate.result_cache import ResultCache


@dataclass(slots=True)
class Group:
    """Logs of a folder (their places in it, ascending) that its captures may route between."""

    members: list[int]
    # The file names its captures' lines hint at that are no log of the folder (whether they exist
    # decides REQ004 against a log this run does not check): part of its cache key.
    hints: list[str]


@dataclass(slots=True)
class FolderLogs:
    """One local folder's logs, held as their names and what the folder's listing holds beside each.

    A seed-era project folder holds thousands of logs, all held while it is planned and cut: here a
    name and a tuple a log, where a :class:`LogSource` and its path object cost about 1 KB.  A source
    is made again when one is asked for (``logs[i]``).  A log that is more than its name (a session
    in a database, a URL, one whose folder was not listed, another root) is held as it is, in
    ``odd``; :func:`listed` turns a folder with one into plain sources first."""

    folder: LogPath
    root: LogPath
    names: list[str] = field(default_factory=list)
    beside: list[tuple[str, ...]] = field(default_factory=list)
    odd: dict[int, LogSource] = field(default_factory=dict)
    first: LogSource | None = None  # the first log as given: a folder of one log makes no source again

    def add(self, src: LogSource) -> None:
        """Hold ``src``, a log of this folder."""
        if src.member is None and src.beside is not None and src.root == self.root and isinstance(src.path, Path):
            if not self.names:
                self.first = src
            self.names.append(src.path.name)
            self.beside.append(src.beside)
        else:
            self.odd[len(self.names)] = src
            self.names.append("")
            self.beside.append(())

    def path(self, i: int) -> LogPath:
        return self.folder / self.names[i]

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, i: int) -> LogSource:
        if i == 0 and self.first is not None:
            return self.first
        odd = self.odd.get(i)
        return odd if odd is not None else LogSource(self.folder / self.names[i], self.root, beside=self.beside[i])

    def __iter__(self) -> Iterator[LogSource]:
        return (self[i] for i in range(len(self.names)))


def listed(sources: FolderLogs | list[LogSource]) -> FolderLogs | None:
    """A folder's logs, each with the capture names the folder holds beside it (the folder listed
    here when the walk that found them did not list it); None when they cannot be cut: a session in
    a database, a URL, or a folder that cannot be listed."""
    if isinstance(sources, FolderLogs) and not sources.odd:
        return sources
    sources = list(sources)
    if any(s.member is not None or not isinstance(s.path, Path) for s in sources):
        return None
    if any(s.beside is None for s in sources):
        names = folder_names(sources[0].path.parent)
        if names is None:
            return None
        sources = [replace(s, beside=captures_present(s.path.name, names)) for s in sources]
    logs = FolderLogs(sources[0].path.parent, sources[0].root)
    for s in sources:
        logs.add(s)
    return None if logs.odd else logs  # (a log under another root)


Named = tuple[tuple[str, ...], tuple[str, ...]]
"""What a capture's lines name: their session ids and their file hints."""


def route_groups(logs: FolderLogs) -> list[Group] | None:
    """The groups of a folder's logs that captures route between, in the order of each group's first
    log; a log in none is a unit alone.  None when the folder must stay whole.

    What captures name is read first, so a log is kept in the plan only for an id or a file name
    some capture names: the plan holds little more than a number a log however large the folder.
    What a capture names is held as read (its ids and file hints); the names they hint at are
    spelled out only while its group is joined and when its group's hints are made, and what only
    the joining needs is let go before the groups are made.  A flat folder of 100,000 sessions with
    25,000 captures: its plan's peak went from 73 to 45 MB of Python objects."""
    if any(is_folder_capture(n) for b in logs.beside for n in b):
        return None
    finders: dict[str, list[int]] = {}  # capture name -> the logs whose lookup finds it
    for i, b in enumerate(logs.beside):
        found = find_capture(logs.path(i), b) if b else None
        if found is not None:
            finders.setdefault(found.name, []).append(i)
    if not finders:
        return []
    folder = logs.folder
    named: dict[str, Named] = {}  # capture name -> what its lines name
    all_ids: set[str] = set()
    all_files: set[str] = set()  # the hinted names the file hints spell
    for name in finders:
        keys = capture_keys(folder / name)
        if keys is None:
            return None
        named[name] = (tuple(keys.ids), tuple(keys.files))
        all_ids.update(keys.ids)
        all_files.update(n for f in keys.files for n in hinted_names(None, f))
    by_id: dict[str, list[int]] = {}  # only the ids some capture names
    by_name: dict[str, int] = {}  # only the file names some capture hints at
    for i, name in enumerate(logs.names):
        possible = possible_ids(logs[i])
        if possible is None:
            return None
        for sid in possible.intersection(all_ids):
            by_id.setdefault(sid, []).append(i)
        if name in all_files or _hinted_by_id(name, all_ids):
            by_name[name] = i
    joined = _Joined()
    for name, found_by in finders.items():
        ids, files = named[name]
        members = list(found_by)  # every log of the capture's name: where a line naming no session goes
        for sid in ids:
            members.extend(by_id.get(sid, []))
        members.extend(by_name[n] for n in _hinted(ids, files) if n in by_name)
        joined.join(members)
    first_of = {found_by[0]: name for name, found_by in finders.items()}  # a capture by its first finder
    del finders, by_id  # (a large folder's plan holds the groups from here)
    groups: dict[int, list[int]] = {}  # in the order of each group's first log
    for i in sorted(joined.parent):  # (a log is in a group only if a capture joined it to a finder)
        groups.setdefault(joined.find(i), []).append(i)
    del joined
    return [Group(members, _missing(members, first_of, named, by_name)) for members in groups.values()]


def _missing(
    members: list[int], first_of: dict[int, str], named: dict[str, Named], by_name: dict[str, int]
) -> list[str]:
    """What a group's captures hint at that is no log of the folder, sorted."""
    hinted: set[str] = set()
    for i in members:
        name = first_of.get(i)
        if name is not None:
            hinted.update(_hinted(*named[name]))
    return sorted(n for n in hinted if n not in by_name)


def _hinted(ids: tuple[str, ...], files: tuple[str, ...]) -> set[str]:
    """The file names a capture's lines hint at, by session id and by file hint (:func:`hinted_names`)."""
    hinted = {n for sid in ids for n in hinted_names(sid, None)}
    hinted.update(n for f in files for n in hinted_names(None, f))
    return hinted


def _hinted_by_id(name: str, ids: set[str]) -> bool:
    """Whether ``name`` is one that :func:`hinted_names` spells for one of ``ids`` (an id and a log
    suffix): asked of the one id the name could be, not spelled out for every id."""
    return any(
        name.endswith(s) and name[: -len(s)] in ids and name in hinted_names(name[: -len(s)], None)
        for s in LOG_SUFFIXES
    )


GroupsOf = Callable[[FolderLogs], "list[Group] | None"]
"""What cuts a folder's logs into groups: :func:`route_groups`, or :func:`cached_groups` of a cache."""


def cached_groups(cache: ResultCache, logs: FolderLogs) -> list[Group] | None:
    """:func:`route_groups`, answered by ``cache`` while no log or capture of the folder has changed:
    a run whose units the cache answers reads no log and no capture, not even to plan them.

    The entry's identity and key are digests, made a log at a time: spelled out, they held every
    log's path and revision at once, and a flat folder of 100,000 sessions peaked at 171 MB (73 MB
    without the cache)."""
    folder = logs.folder
    key = Digest()
    for i in range(len(logs)):
        r = revision(logs.path(i))
        if r is None:
            return route_groups(logs)
        key.add([r, list(logs.beside[i])])
    for n in sorted({n for b in logs.beside for n in b}):
        r = revision(folder / n)
        if r is None:
            return route_groups(logs)
        key.add(r)
    identity = Digest()
    for name in logs.names:
        identity.add(name)
    hit = cache.get("groups", [str(folder), identity.hexdigest()], key.hexdigest())
    if hit is not None:
        return None if hit["groups"] is None else [Group(m, h) for m, h in hit["groups"]]
    groups = route_groups(logs)
    value = {"groups": None if groups is None else [[g.members, g.hints] for g in groups]}
    cache.put("groups", [str(folder), identity.hexdigest()], key.hexdigest(), value)
    return groups


class _Joined:
    """Union-find over the logs of a folder that captures join: a log never joined is its own root."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, i: int) -> int:
        parent = self.parent
        while parent.get(i, i) != i:
            parent[i] = parent.get(parent[i], parent[i])
            i = parent[i]
        return i

    def join(self, members: list[int]) -> None:
        if not members:
            return
        first = min(self.find(i) for i in members)
        for i in members:
            self.parent[self.find(i)] = first  # (a log not joined before is its own root: now it is in)
