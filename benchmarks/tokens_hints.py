"""Precision and recall of the capture-less hint rule (TOK001), on the real corpus and on injected faults.

1. Accepted logs: every session of ``../shared/corpus`` (the harness accepted
   every request of them), checked with the token rules: any TOK001 there is
   a false hint.  The sessions with real usage are the ones it can speak of.
2. Injected faults, in every real-usage session (plain ``.jsonl``), at every
   tool result that a later request carries, ``n`` tokens each way:

   - *drop*: the provider received ``n`` tokens the log lacks (a message
     dropped from the log): the usage of every later step grows by ``n``;
   - *add*: the log holds ``n`` tokens the provider never received (a message
     the log added): the usage of every later step shrinks by ``n``;
   - *alter*: a message's text in the log differs from what was sent: the
     tool result's text is ``n`` tokens longer in the log.

   A hint is a true positive when it names the first step whose request
   carries the fault; any other hint on the faulty log is a false positive.

    python benchmarks/tokens_hints.py [--corpus DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from invariants.analysis.token_rules import HINT_TOLERANCE, hint_findings  # noqa: E402
from invariants.analysis.token_steps import step_tokens, usage_kind  # noqa: E402
from invariants.read.discover import discover  # noqa: E402
from invariants.replay.session import replay  # noqa: E402

SIZES = (25, 50, 100, 200)  # tokens: " word" is one token of the DeepSeek V4 tokenizer
Fault = Callable[[list[dict]], None]


def _usages(obj: dict) -> list[dict]:
    d = obj.get("data") if isinstance(obj.get("data"), dict) else {}
    chunk = d.get("chunk") if isinstance(d.get("chunk"), dict) else {}
    return [u for u in (d.get("usage"), chunk.get("usage")) if isinstance(u, dict)]


def _shift_usage(seq: int, n: int) -> Fault:
    """Every usage logged after ``seq`` counts ``n`` tokens more (or fewer: cache reads kept, input shrinks)."""

    def apply(objs: list[dict]) -> None:
        for o in objs:
            if o["seq"] > seq:
                for u in _usages(o):
                    if not isinstance(u.get("inputTokens"), int) or not isinstance(u.get("cacheReadTokens"), int):
                        continue
                    if n >= 0:
                        u["inputTokens"] += n
                    else:  # fewer received: from the uncached input first, then from the cache reads
                        take = min(-n, u["inputTokens"])
                        u["inputTokens"] -= take
                        u["cacheReadTokens"] -= -n - take

    return apply


def _lengthen(seq: int, n: int) -> Fault:
    def apply(objs: list[dict]) -> None:
        for o in objs:
            if o["seq"] == seq:
                o["data"]["content"][0]["text"] += " word" * n

    return apply


def faults(objs: list[dict]) -> Iterator[tuple[str, int, int, Fault]]:
    """(kind, size, seq of the fault, transform) for each tool result that a later request carries."""
    last_step_start = max((o["seq"] for o in objs if o["type"] == "step/start"), default=-1)
    for o in objs:
        d = o.get("data")
        if o["seq"] >= last_step_start or o["type"] != "tool/result" or not isinstance(d, dict) or not d.get("content"):
            continue
        for n in SIZES:
            yield "drop", n, o["seq"], _shift_usage(o["seq"], n)
            yield "add", n, o["seq"], _shift_usage(o["seq"], -n)
            yield "alter", n, o["seq"], _lengthen(o["seq"], n)


def _hint_steps(model: Any) -> list[int]:
    return [f.seq for f in hint_findings(model, step_tokens(model))]


def accepted(corpus: Path) -> dict:
    """TOK001 on every accepted session of the corpus, by what its usage is."""
    sources, _ = discover([corpus])
    kinds: dict[str, int] = defaultdict(int)
    hints: list[str] = []
    for src in sources:
        model = replay(src)
        kind = usage_kind(model)
        kinds[kind] += 1
        hints += [f"{src.display}: {f.message}" for f in hint_findings(model, step_tokens(model))]
    return {"sessions": len(sources), "kinds": dict(kinds), "hints": hints}


def injected(corpus: Path) -> dict:
    roots = [corpus / "upstream-seed-era", corpus / "upstream-late-era"]
    sources, _ = discover([p for r in roots for p in sorted(r.iterdir()) if "snapshot" in p.name])
    table: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0, 0])  # -> [injected, caught, false hints]
    sessions = 0
    with tempfile.TemporaryDirectory() as tmp:
        for src in sources:
            if src.path.name.endswith(".zstd") or usage_kind(replay(src)) != "real":
                continue
            sessions += 1
            raw = src.path.read_bytes().splitlines()
            for kind, n, seq, apply in faults([orjson.loads(x) for x in raw[1:]]):
                objs = [orjson.loads(x) for x in raw[1:]]
                apply(objs)
                dst = Path(tmp) / src.path.name
                dst.write_bytes(b"\n".join([raw[0], *map(orjson.dumps, objs)]) + b"\n")
                model = replay(discover([dst])[0][0])
                carrying = [st.seq for st in model.steps if st.seq > seq and st.usage]
                at = carrying[0] if carrying else None
                found = _hint_steps(model)
                row = table[(kind, n)]
                row[0] += 1
                row[1] += at in found
                row[2] += sum(1 for s in found if s != at)
    return {"sessions": sessions, "table": dict(table)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    args = ap.parse_args()
    a = accepted(args.corpus)
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(a["kinds"].items()))
    print(f"accepted corpus: {a['sessions']} sessions ({kinds}): {len(a['hints'])} TOK001 hint(s)")
    for line in a["hints"]:
        print(f"  false hint: {line}")
    t = injected(args.corpus)
    print(f"injected faults in {t['sessions']} real-usage sessions; tolerance {HINT_TOLERANCE}")
    print()
    print("| fault | tokens | injected | caught at the step | recall | false hints | precision |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    totals = [0, 0, 0]
    for (kind, n), (count, caught, false) in sorted(t["table"].items(), key=lambda kv: (kv[0][0], kv[0][1])):
        precision = f"{100 * caught / (caught + false):.0f} %" if caught + false else "-"
        print(f"| {kind} | {n} | {count} | {caught} | {100 * caught / count:.0f} % | {false} | {precision} |")
        totals = [x + y for x, y in zip(totals, (count, caught, false))]
    count, caught, false = totals
    false += len(a["hints"])
    print(
        f"| all | | {count} | {caught} | {100 * caught / count:.0f} % | {false} | "
        f"{100 * caught / max(1, caught + false):.0f} % |"
    )


if __name__ == "__main__":
    main()
