"""How long does `inspector check` on a tiny log spend importing?

Runs ``python -X importtime`` on ``inspector check LOG --no-cache -q`` (a
sample log by default) and on a bare interpreter, ``--repeat`` times each,
and prints the best total self time of the modules the check imports beyond
the bare interpreter's, then the costliest of them.  Target: under 0.1 s.
The bytecode cache is on (in a temporary folder), as for an installed tool,
and the check runs from an empty folder, as in a project with no
``[tool.inspector]`` (this repository's own pyproject.toml has to be parsed).

    python benchmarks/import_time.py [LOG] [--repeat 9] [--top 25]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.check_speed import child_env  # noqa: E402

_ROW = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def imported(code: str, env: dict[str, str], cwd: Path) -> dict[str, int]:
    """Module -> self import time in microseconds, for one fresh interpreter running ``code`` in ``cwd``."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, cwd=cwd, env=env
    )
    return {m.group(4): int(m.group(1)) for m in map(_ROW.match, proc.stderr.splitlines()) if m}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", default=str(ROOT / "sample_logs" / "clean-multi-turn.jsonl"))
    ap.add_argument("--repeat", type=int, default=9, help="runs; the best is shown (default 9)")
    ap.add_argument("--top", type=int, default=25, help="modules listed (default 25)")
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="inspector-imports-"))
    env = child_env(out)
    cwd = out / "project"
    cwd.mkdir()
    log = str(Path(args.log).resolve())
    check = f"import sys\nfrom inspector.cli import main\nsys.exit(main(['check', {log!r}, '--no-cache', '-q']))"
    imported(check, env, cwd)  # fill the bytecode cache
    bare = set(imported("pass", env, cwd))
    best: tuple[int, dict[str, int]] | None = None
    for _ in range(args.repeat):
        extra = {k: v for k, v in imported(check, env, cwd).items() if k not in bare}
        total = sum(extra.values())
        if best is None or total < best[0]:
            best = (total, extra)
    assert best is not None
    total, extra = best
    print(f"inspector check {Path(args.log).name}: {total / 1000:.1f} ms of imports in {len(extra)} modules")
    print(f"beyond a bare interpreter's, best of {args.repeat} (python -X importtime, self times)")
    for name, us in sorted(extra.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {us / 1000:6.2f} ms  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
