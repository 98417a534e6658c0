"""The NVLink domain (clique) of this node's GPUs, from ``nvidia-smi`` (GB200/GB300 NVL72).

``nvidia-smi --query-gpu=fabric.clusterUuid,fabric.cliqueId,fabric.state,fabric.status
--format=csv,noheader`` prints one line per GPU: ``<cluster UUID>, <clique ID>, <state>,
<status>``, the GPU's registration with the NVLink fabric (``Completed`` and ``Success``
once done). Two NVIDIA components label ``nvidia.com/gpu.clique`` with ``<cluster UUID>.<clique
ID>`` (docs/compatibility.md): gpu-feature-discovery, and the DRA driver's compute-domain
plugin on nodes without GFD; this source writes the same value, so the agent claims theirs:
- a GPU whose fabric state is ``N/A`` (no NVLink fabric) is not counted; nor is one whose
  registration completed with the all-zero cluster UUID (NVLink inside the node only);
- every other GPU is counted, and its registration must have completed successfully: while
  one is ``Not Started`` or ``In Progress``, or completed with an error status, the clique
  is unknown — neither written, changed nor removed — since the GPUs that did register may
  not be all of this node's (the reason is logged and in ``topology_labeler_label_unknown``);
- the value is written only when every counted GPU has the same cluster UUID and clique
  ID: the UUID lowercase, as both write it, then ``.``, then the clique ID;
- GPUs that disagree, or none counted (no GPUs, no fabric), is "no data": the node is in no
  single NVLink domain, and an earlier label is kept rather than guessed at.

The command runs under a timeout and at most ``MAX_OUTPUT_BYTES`` of its output are read
(72 GPUs print a few KB): a hung driver or a flood of output is an error, labels kept.

Role: level ``nvlink_clique``, reported as a value written as it is (never hashed), so
that it equals their label and the agent claims it without a write.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from dataclasses import dataclass

from labeler.base.flags import positive_number
from labeler.core.profiles import Profile, Roles
from labeler.sources import Flag, NoData, Reading, Settings, SourceError, SourceKind, options

NAME = "nvidia-smi"
CLIQUE = "nvlink_clique"
ROLES = Roles(levels=(CLIQUE,))
FIELDS = ("fabric.clusterUuid", "fabric.cliqueId", "fabric.state", "fabric.status")
QUERY = ("--query-gpu=" + ",".join(FIELDS), "--format=csv,noheader")
COMPLETED, SUCCESS = "completed", "success"  # the state and status of a registered GPU
# Why the clique is unknown, as the metric's cause: a GPU still registering, or one whose
# registration failed.
PENDING, FAILED = "fabric-pending", "fabric-failed"
MAX_OUTPUT_BYTES = 64 * 1024
_NOT_AVAILABLE = {"n/a", "[n/a]", "not supported", ""}
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_ZERO_UUID = "00000000-0000-0000-0000-000000000000"
_HINT = (
    "the agent needs the NVIDIA driver's nvidia-smi (mount it from the host or run with the "
    "NVIDIA container runtime), or pass --nvidia-smi PATH"
)


@dataclass(frozen=True)
class NvlinkOptions:
    """``path``: the nvidia-smi to run (a name is looked up on PATH); ``timeout``: seconds
    it may take."""

    path: str = "nvidia-smi"
    timeout: float = 10.0


def _build(profile: Profile, settings: Settings, stop: threading.Event) -> NvlinkSource:
    return NvlinkSource(options(NvlinkOptions(), settings, NAME))


KIND = SourceKind(
    NAME,
    f"NVLink clique (source {NAME})",
    NvlinkOptions(),
    (
        Flag(
            "--nvidia-smi",
            "path",
            f"the nvidia-smi to run (default {NvlinkOptions.path}, found on PATH)",
            metavar="PATH",
        ),
        Flag(
            "--nvidia-smi-timeout",
            "timeout",
            f"seconds nvidia-smi may take (default {NvlinkOptions.timeout:g})",
            type=positive_number,
            metavar="S",
        ),
    ),
    _build,
)


def parse_cliques(text: str) -> Reading | NoData:
    """The clique of this node's fabric-attached GPUs from nvidia-smi's CSV (the rule is
    in the module docstring); raises SourceError on a line not of the expected shape."""
    cliques: set[str] = set()
    waiting: list[tuple[str, str]] = []  # (cause, what) of each GPU not registered (yet)
    gpus = 0
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        gpus += 1
        kind, what = _gpu(n, line)
        if kind == CLIQUE:
            cliques.add(what)
        elif kind:
            waiting.append((kind, f"GPU {gpus - 1} {what}"))
    if waiting:
        reason = (
            f"{len(waiting)} of {gpus} GPUs have not registered with the NVLink fabric "
            f"({'; '.join(w for _, w in waiting)}): the clique is kept as it is until "
            "every GPU has"
        )
        cause = FAILED if any(c == FAILED for c, _ in waiting) else PENDING
        return Reading(
            ids={},
            unknown={CLIQUE: reason},
            causes={CLIQUE: cause},
            details={"source": "nvidia-smi"},
        )
    if not cliques:
        return NoData(
            f"no GPU of {gpus} is attached to an NVLink fabric (nvidia-smi reports no "
            "cluster UUID and clique ID): this node is in no NVLink domain"
        )
    if len(cliques) > 1:
        return NoData(
            f"this node's GPUs are in {len(cliques)} NVLink cliques "
            f"({', '.join(sorted(cliques))}): it is in no single NVLink domain, so no clique "
            "is written"
        )
    (value,) = cliques
    return Reading(ids={}, values={CLIQUE: value}, details={"source": "nvidia-smi"})


def _gpu(n: int, line: str) -> tuple[str, str]:
    """One GPU's line: ("", "") not counted, (PENDING or FAILED, what nvidia-smi says),
    or (CLIQUE, its clique value)."""
    fields = [f.strip() for f in line.split(",")]
    if len(fields) != len(FIELDS):
        raise SourceError(
            f"nvidia-smi line {n}: expected '<cluster UUID>, <clique ID>, <fabric state>, "
            f"<fabric status>', got {line[:120]!r}; is --nvidia-smi NVIDIA's nvidia-smi "
            "(driver ≥ 550)?"
        )
    uuid, clique, state, status = fields[0].lower(), fields[1], fields[2], fields[3]
    if state.lower() in _NOT_AVAILABLE:
        return "", ""  # no NVLink fabric on this GPU: not counted
    if state.lower() != COMPLETED:
        return PENDING, f"is {state!r}"
    if status.lower() != SUCCESS:
        return FAILED, f"failed ({status!r})"
    if uuid in _NOT_AVAILABLE or clique.lower() in _NOT_AVAILABLE or uuid == _ZERO_UUID:
        return "", ""  # registered, but in no multi-node NVLink domain: not counted
    if not _UUID.match(uuid) or not clique.isdigit():
        raise SourceError(
            f"nvidia-smi line {n}: {line[:120]!r} is not a cluster UUID and a clique ID; "
            "nvidia-smi answered something unexpected, keeping the current label"
        )
    return CLIQUE, f"{uuid}.{int(clique)}"


class NvlinkSource:
    """Runs nvidia-smi once per read."""

    name = NAME
    roles = ROLES

    def __init__(self, options: NvlinkOptions | None = None) -> None:
        self.options = options or NvlinkOptions()

    def read(self) -> Reading | NoData:
        return parse_cliques(self._run())

    def _run(self) -> str:
        import shutil
        import subprocess

        opts = self.options
        binary = shutil.which(opts.path)
        if binary is None:
            where = "on PATH" if os.sep not in opts.path else "there"
            raise SourceError(
                f"nvidia-smi not found ({opts.path!r} is not an executable {where}); {_HINT}"
            )
        # Files, not pipes: the output is read up to a bound afterwards, so a flood of it
        # costs disk the timeout bounds, never memory.
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                done = subprocess.run(
                    [binary, *QUERY],
                    stdout=out,
                    stderr=err,
                    stdin=subprocess.DEVNULL,
                    timeout=opts.timeout,
                    check=False,
                )
            except subprocess.TimeoutExpired as e:
                raise SourceError(
                    f"nvidia-smi did not answer within --nvidia-smi-timeout {opts.timeout:g}s; "
                    "the GPU driver may be hung (check 'nvidia-smi' on the host and dmesg)"
                ) from e
            except OSError as e:
                raise SourceError(f"cannot run {binary}: {e.strerror or e}; {_HINT}") from e
            out.seek(0)
            data = out.read(MAX_OUTPUT_BYTES + 1)
            err.seek(0)
            said = err.read(400).decode("utf-8", errors="replace")
        if done.returncode != 0:
            shown = " ".join((said or data[:400].decode("utf-8", errors="replace")).split())
            raise SourceError(
                f"nvidia-smi exited with {done.returncode}: {shown or 'no output'}; {_HINT}"
            )
        if len(data) > MAX_OUTPUT_BYTES:
            raise SourceError(
                f"nvidia-smi printed more than {MAX_OUTPUT_BYTES} bytes; a node's GPUs print a "
                "few KB, so this is not the query the agent asked for"
            )
        return data.decode("utf-8", errors="replace")
