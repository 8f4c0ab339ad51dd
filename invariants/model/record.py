"""Plain record classes for the check path, without ``@dataclass``.

On Python 3.11 every ``@dataclass`` compiles its generated methods when its
module is imported (about half a millisecond a class), and ``inspector check``
on a tiny log imported some forty of them before reading a line.  A record
here names its fields once in ``__slots__`` (in ``__init__`` order) and writes
its own ``__init__`` taking them in that order; equality, repr, pickling and, for a frozen one, hashing and
immutability follow those fields as a dataclass's would.
"""

from __future__ import annotations

from typing import Any


class Record:
    """A mutable record: equal to another of its class with equal fields, unhashable (a dataclass's ``eq``:
    defining ``__eq__`` sets ``__hash__`` to None)."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__qualname__}({fields})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (checkpoints, worker processes) and copied as a call of the class on its fields.
        return type(self), self._values()


class FrozenRecord(Record):
    """A record that cannot change once made, hashable by its fields (a frozen dataclass).

    Its ``__init__`` hands every field, in ``__slots__`` order, to :meth:`_init`."""

    __slots__: tuple[str, ...] = ()

    def _init(self, *values: Any) -> None:
        for name, value in zip(self.__slots__, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__qualname__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__qualname__}")

    def __hash__(self) -> int:
        return hash(self._values())
