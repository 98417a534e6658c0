"""``python -m tests.oracles SCHED --n N --seed S [--keep DIR]``: one batch of scenarios for
one scheduler's oracle. Prints each disagreement with the folder that reproduces it and
ends with ``oracle SCHED: A agree, D disagree`` (exit 1 when D > 0)."""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="scripts/oracle.sh")
    p.add_argument("sched", help="kueue, volcano or kubesched")
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", type=Path, help="folder for the reproducers (default: a temp one)")
    args = p.parse_args(argv)
    compare = importlib.import_module(f"tests.oracles.{args.sched}.compare")
    out = args.keep or Path(tempfile.mkdtemp(prefix=f"oracle-{args.sched}-"))
    out.mkdir(parents=True, exist_ok=True)
    result = compare.batch(args.n, args.seed, out)
    for d in result.disagreements:
        print(f"{d.name}: {d.kind}: {d.detail}\n  reproduce: {d.folder}")
    print(f"oracle {args.sched}: {result.agree} agree, {len(result.disagreements)} disagree")
    return 1 if result.disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
