"""python -m tests.oracles SCHED --n N --seed S [--keep DIR]: one batch of scenarios for
one scheduler's oracle; prints each disagreement with the folder that reproduces it and
ends with ``oracle SCHED: A agree, D disagree`` (exit 1 when D > 0)."""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m tests.oracles")
    p.add_argument("sched")
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--keep", type=Path, help="folder for the reproducers (default: a temporary one)"
    )
    args = p.parse_args()
    compare = importlib.import_module(f"tests.oracles.{args.sched}.compare")
    out = args.keep or Path(tempfile.mkdtemp(prefix=f"oracle-{args.sched}-"))
    out.mkdir(parents=True, exist_ok=True)
    result = compare.batch(args.n, args.seed, out)
    for d in result.disagreements:
        print(f"{d.name}: {d.kind}: {d.detail}\n  reproduce: {d.folder}")
    agree, disagree = result.agree, len(result.disagreements)
    redrawn = getattr(result, "redrawn", [])
    if redrawn:
        print(f"agreed only at a later draw of the scheduler: {', '.join(redrawn)}")
    print(f"oracle {args.sched}: {agree} agree, {disagree} disagree")
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
