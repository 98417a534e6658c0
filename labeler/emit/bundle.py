"""The emitters of ``generate``'s outputs, and every output of one set of options: pure, so
it is tested without I/O.

An output kind plugs in by adding its module's ``Emitter`` to ``EMITTERS`` (in the order
the outputs are built). Each output is named after the file it is written to with
``--output-dir``; ``-o -`` concatenates them into one YAML stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from labeler.base.errors import UsageError
from labeler.emit import Emitter, Output, Target, hypernodes, kueue, slurm, volcano
from labeler.emit.kinds import DEFAULT_KINDS, Kind

EMITTERS: tuple[Emitter[Any], ...] = (
    kueue.EMITTER,
    volcano.VOLCANO,
    hypernodes.EMITTER,
    volcano.DISCOVERY,
    slurm.EMITTER,
)
# Outputs that make the scheduler see HyperNodes.
HYPERNODE_FILES = (hypernodes.HYPERNODES_FILE, volcano.DISCOVERY_FILE)

Opts = TypeVar("Opts")


@dataclass(frozen=True)
class GenerateOptions:
    """The kinds to build, and the options of those that are not their emitter's defaults
    (one object of each emitter's options type at most)."""

    kinds: tuple[Kind, ...] = DEFAULT_KINDS
    options: tuple[object, ...] = ()

    def __post_init__(self) -> None:
        types = [type(o) for o in self.options]
        known = {type(e.defaults) for e in EMITTERS}
        strays = [t.__name__ for t in types if t not in known or types.count(t) > 1]
        if strays:
            raise TypeError(f"options of no emitter, or given twice: {', '.join(strays)}")

    def of(self, emitter: Emitter[Opts]) -> Opts:
        """The options ``emitter`` builds with."""
        for o in self.options:
            if type(o) is type(emitter.defaults):
                return o
        return emitter.defaults


def parse_kinds(text: str) -> tuple[Kind, ...]:
    names = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in names if k not in tuple(Kind)]
    if unknown or not names:
        raise UsageError(f"--emit {text!r}: choose from {', '.join(Kind)} (comma-separated)")
    return tuple(Kind(k) for k in names)


def _asked(opts: GenerateOptions) -> list[Emitter[Any]]:
    return [e for e in EMITTERS if e.kind in opts.kinds]


def unusable(target: Target, opts: GenerateOptions) -> dict[Kind, list[str]]:
    """Kinds asked for whose consumer could not use them, with the reasons."""
    out: dict[Kind, list[str]] = {}
    for emitter in _asked(opts):
        reasons = emitter.unusable(target, opts.of(emitter))
        if reasons:
            out[emitter.kind] = reasons
    return out


def build(target: Target, opts: GenerateOptions) -> list[Output]:
    """The outputs asked for; HyperNodes and Slurm files only when positions are known."""
    out: list[Output] = []
    for emitter in _asked(opts):
        out += emitter.build(target, opts.of(emitter))
    return out
