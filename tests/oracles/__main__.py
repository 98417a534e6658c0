"""Run one scheduler's oracle batch: ``python -m tests.oracles SCHED --n N --seed S``.

Prints each disagreement with the folder that reproduces it, then the line
``oracle SCHED: A agree, D disagree``; the exit status is 1 when D > 0.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="oracle.sh")
    p.add_argument("sched", choices=["kueue", "volcano", "kubesched"])
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", type=Path, help="folder for the scenarios (default: a temp dir)")
    args = p.parse_args(argv)
    compare = importlib.import_module(f"tests.oracles.{args.sched}.compare")
    out = args.keep or Path(tempfile.mkdtemp(prefix=f"oracle-{args.sched}-"))
    result = compare.batch(args.n, args.seed, out)
    for d in result.disagreements:
        print(d)
    print(f"oracle {args.sched}: {result.agree} agree, {len(result.disagreements)} disagree")
    return 1 if result.disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
