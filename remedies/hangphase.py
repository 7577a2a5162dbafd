"""Where a hang stopped: the distributed start-up phase a log shows begun and not finished, and its knobs.

A hang prints nothing of its own: the log stops at the last line the engine printed before it waited. The
distributed phases (hangs.yaml, each with the source lines that begin and end it: the ranks' rendezvous and
NCCL's communicator, the custom all-reduce's peer-to-peer check, expert parallel's all-to-all buffers, the Ray
placement group, the KV-transfer handshake) are where a rank waits on another, and each has knobs the engine or
the library reads there (NCCL_P2P_DISABLE, NCCL_DEBUG, --disable-custom-all-reduce, VLLM_SKIP_P2P_CHECK,
--dist-timeout). The single-process phases (weights, compile, profiling, CUDA graphs) are silentdeath's: a hang
there is named by that phase without knobs. A hang past start-up on a page that runs tensor parallel waits in the
ranks' collectives (hangs.yaml `tensor_parallel`: the custom all-reduce, NCCL's P2P transport).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from remedies.datalist import read_list
from remedies.normalise import normalise
from remedies.silentdeath import READY, Reading

DATA = Path(__file__).with_name("hangs.yaml")
MAX_LINE = 4096


@dataclass(frozen=True)
class HangPhase:
    """A phase a hang can stop in: the lines that begin it, those that end it, what to set or check there."""

    name: str
    running: re.Pattern[str]
    ends: re.Pattern[str]
    knobs: tuple[str, ...] = ()


def _either(patterns: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns))


SIGNS = _either([item["pattern"] for item in read_list(DATA, "signs")])
def _phases(key: str) -> tuple[HangPhase, ...]:
    return tuple(HangPhase(item["name"], _either(item["running"]), _either(item["ends"]), tuple(item["knobs"]))
                 for item in read_list(DATA, key))


PHASES = _phases("phases")
TENSOR_PARALLEL = _phases("tensor_parallel")[0]


def hang_sign(lines: list[str]) -> tuple[int, str] | None:
    """The 0-based line and text of the record in which the engine reports waiting on a process that stopped
    answering (SIGNS), when it is the paste's last log record (no record after it, other than the same report
    again, shows the server doing anything: a healthy boot prints it during a long compile and carries on), or
    None."""
    sign: tuple[int, str] | None = None
    for number, raw in enumerate(lines):
        text = raw[:MAX_LINE]
        if SIGNS.search(text):
            sign = sign or (number, text.strip())
        elif sign is not None and ((text.strip() and normalise(text).record) or READY.search(text)):
            sign = None
    return sign


def hang_phase(lines: list[str]) -> HangPhase | None:
    """The phase the lines show last begun and not ended: a distributed one (PHASES) with its knobs, else the
    start-up phase silentdeath reads (weights, compile, profiling, CUDA graphs) by name, else serving with tensor
    parallel (TENSOR_PARALLEL, its knobs) when the page runs more than one TP rank, else None."""
    open_phase: HangPhase | None = None
    reading = Reading()
    for raw in lines:
        text = raw[:MAX_LINE]
        reading.read(text)
        for phase in PHASES:
            if phase.ends.search(text):
                open_phase = None if open_phase is phase else open_phase
            elif phase.running.search(text):
                open_phase = phase
    if open_phase is not None:
        return open_phase
    if reading.open_phase is not None:
        return HangPhase(reading.open_phase.name, reading.open_phase.running, reading.open_phase.ends)
    if any(TENSOR_PARALLEL.running.search(raw[:MAX_LINE]) for raw in lines):
        return TENSOR_PARALLEL
    return None
