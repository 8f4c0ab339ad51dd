"""Records are declared one way, ``@dataclass(slots=True)``, and keep a record's behaviour:
equal by their fields, pickled and copied by them, frozen ones hashable and read-only."""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib
import pickle
from pathlib import Path

import pytest

from invariants.model.records import Event
from invariants.model.registry import RULES
from invariants.read.profiles import PROFILES
from invariants.read.source import LogSource

ROOT = Path(__file__).resolve().parents[2]


def test_a_record_equals_one_of_its_class_with_equal_fields_and_is_unhashable():
    e = Event("user/message", 3, 0, {"x": 1}, line=5)
    assert e == Event("user/message", 3, 0, {"x": 1}, line=5)
    assert e != Event("user/message", 3, 0, {"x": 1}, line=6)
    assert e != ("user/message", 3, 0, {"x": 1})  # another class never equals
    with pytest.raises(TypeError):
        hash(e)
    assert repr(e).startswith("Event(type='user/message', seq=3, time=0, data={'x': 1}, surface_op=None")


def test_a_record_pickles_and_copies_by_its_fields():
    e = Event("user/message", 3, 0, {"x": [1]}, line=5, offset=40)
    assert pickle.loads(pickle.dumps(e)) == e and copy.deepcopy(e) == e
    rule = next(iter(RULES.values()))
    assert pickle.loads(pickle.dumps(rule)) == rule


def test_a_frozen_record_cannot_change_and_hashes_by_its_fields():
    src = LogSource(Path("/l/s.jsonl"), Path("/l"))
    with pytest.raises(AttributeError):
        src.member = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del src.root  # type: ignore[misc]
    assert hash(src) == hash(LogSource(Path("/l/s.jsonl"), Path("/l"), None))
    assert pickle.loads(pickle.dumps(src)) == src and not hasattr(src, "__dict__")


def test_a_profile_still_pickles_as_the_table_entry():
    assert pickle.loads(pickle.dumps(PROFILES["seed"])) is PROFILES["seed"]


def test_url_paths_order_by_their_text_and_log_sources_key_dicts():
    from invariants.read.source import UrlPath

    a, b = UrlPath("s3://b/x"), UrlPath("s3://a/y")
    assert sorted([a, b]) == [b, a] and b < a <= a and a > b >= b
    with pytest.raises(TypeError):
        _ = a < Path("x")
    src = LogSource(Path("/l/s.jsonl"), Path("/l"))
    assert {src: 1}[LogSource(Path("/l/s.jsonl"), Path("/l"), None)] == 1
    assert pickle.loads(pickle.dumps(LogSource(a, a.parent, "m"))) == LogSource(a, a.parent, "m")


def _stores_its_argument(target: ast.expr, value: ast.expr) -> bool:
    """``self.x = x`` or ``self.x = [] if x is None else x``."""
    if not (isinstance(target, ast.Attribute) and getattr(target.value, "id", None) == "self"):
        return False
    if isinstance(value, ast.IfExp):
        value = value.orelse
    return isinstance(value, ast.Name) and value.id == target.attr


def _hand_written_records() -> list[str]:
    """Classes of ``invariants`` that declare ``__slots__`` and an ``__init__`` that only stores
    each argument under its own name: a record written by hand instead of declared as a dataclass."""
    found = []
    for path in sorted((ROOT / "invariants").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            slots = any(
                isinstance(b, ast.Assign) and any(getattr(t, "id", None) == "__slots__" for t in b.targets)
                for b in node.body
            )
            init = next((b for b in node.body if isinstance(b, ast.FunctionDef) and b.name == "__init__"), None)
            if not slots or init is None:
                continue
            pairs: list[tuple[ast.expr, ast.expr]] = []
            plain = True
            for st in init.body:
                if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
                    continue  # a docstring
                if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                    plain = plain and ast.unparse(st.value.func).endswith("._init")  # the old record base's
                    continue
                if not (isinstance(st, ast.Assign) and len(st.targets) == 1):
                    plain = False
                    continue
                t, v = st.targets[0], st.value
                if isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple):
                    pairs.extend(zip(t.elts, v.elts))
                else:
                    pairs.append((t, v))
            if plain and all(_stores_its_argument(t, v) for t, v in pairs):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    return found


def test_records_are_declared_one_way():
    assert _hand_written_records() == []


@pytest.mark.parametrize(
    "name",
    [
        "invariants.model.records:Event",
        "invariants.model.registry:Rule",
        "invariants.read.profiles:Profile",
        "invariants.read.source:LogSource",
        "invariants.replay.model:StepState",
        "invariants.gate.policy:FindingPolicy",
    ],
)
def test_a_record_is_a_slotted_dataclass(name):
    module, _, cls = name.partition(":")
    record = getattr(importlib.import_module(module), cls)
    assert dataclasses.is_dataclass(record) and "__slots__" in vars(record)
