"""The library's layers: each imports only the ones below it, with no import circles.

Imports are read from the source (every ``import`` and ``from ... import``,
lazy ones inside functions included), so a lazy import cannot hide a circle.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "invariants"
# Bottom to top; a module may import its own layer and the layers before it.
LAYERS = ["model", "read", "rules", "replay", "analysis", "gate", "reduce", "simulate"]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path, known: set[str]) -> set[str]:
    """Every invariants module ``path`` imports (a name imported from a package counts when it is a module)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        out.update(n for n in names if n in known)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: _imports(path, set(mods)) - {name} for name, path in mods.items()}


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def test_every_module_lives_in_a_layer():
    loose = [m for m in _modules() if m not in ("invariants", "invariants.__main__") and _layer(m) is None]
    assert not loose, f"modules outside the layers {LAYERS}: {loose}"


def test_no_module_imports_a_higher_layer():
    bad = []
    for mod, deps in _graph().items():
        mine = _layer(mod)
        if mine is None:
            continue
        for dep in deps:
            theirs = _layer(dep)
            if theirs is None or theirs > mine:
                bad.append(f"{mod} -> {dep}")
    assert not bad, "imports against the layering:\n" + "\n".join(sorted(bad))


def test_nothing_on_the_check_path_imports_the_simulators():
    users = [
        m
        for m, deps in _graph().items()
        if _layer(m) != LAYERS.index("simulate") and any(_layer(d) == LAYERS.index("simulate") for d in deps)
    ]
    assert not users


def test_there_is_no_import_circle():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep) :] + [dep])
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_import_invariants_loads_no_tui_index_simulator_cluster_or_url_code():
    code = (
        "import sys, invariants; invariants.check; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'sqlite_utils', 'dask', 'distributed', "
        "'fsspec', 'pyarrow', 'inspector', 'opentelemetry')"
        " or m.startswith('invariants.simulate')]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


def _imported_modules(path: Path) -> list[tuple[str, bool]]:
    """(module, at top level) of every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((a.name, id(node) in top) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, id(node) in top))
    return out


def test_opentelemetry_is_imported_only_lazily_by_the_sender():
    """The otel extra is optional: only inspector/otlp_send.py names it, and only inside functions."""
    users = {}
    for path in sorted((ROOT / "invariants").rglob("*.py")) + sorted((ROOT / "inspector").rglob("*.py")):
        mods = [(m, top) for m, top in _imported_modules(path) if m.split(".")[0] == "opentelemetry"]
        if mods:
            users[str(path.relative_to(ROOT))] = mods
    assert set(users) == {"inspector/otlp_send.py"}
    assert not any(top for _, top in users["inspector/otlp_send.py"])


def test_check_and_a_file_export_load_no_opentelemetry(tmp_path):
    code = (
        "import sys; from inspector.cli import main; "
        f"main(['check', {str(ROOT / 'sample_logs' / 'clean-multi-turn.jsonl')!r}, '--no-cache', '-q']); "
        f"main(['export', {str(ROOT / 'sample_logs' / 'clean-multi-turn.jsonl')!r}, '-o', "
        f"{str(tmp_path / 'out.jsonl')!r}]); "
        "print([m for m in sys.modules if m.split('.')[0] == 'opentelemetry'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "out.jsonl").stat().st_size > 0
