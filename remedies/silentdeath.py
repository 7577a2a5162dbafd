"""Read a death the server did not report: a log that stops during a startup phase, and the marks a kill leaves.

A process killed from outside (the kernel's or a container's OOM killer, a kubelet eviction, a liveness probe,
an operator) prints nothing of its own: the log stops mid-phase. What is left is the phase it stopped in and,
sometimes, the mark of the kill printed by whoever watched the process. The rule, read from the lines the
engines print when each startup phase begins and when it ends:

- The phases and their end lines (phases.yaml, with the source of each; vLLM 0.32 / SGLang 0.5.23, older wordings
  alike):
  weight loading ends with vLLM's "Loading weights took" (model_loader/default_loader.py) and "Model loading
  took" (v1/worker/gpu_model_runner.py), V0's "Loading model weights took", SGLang's "Load weight end"
  (srt/model_executor/model_runner.py); weight streaming with the Run:ai streamer's "[RunAI Streamer] Overall
  time to stream" (runai-model-streamer file_streamer.py); torch.compile with "torch.compile takes / took ... s
  in total" (vllm/compilation/monitor.py); memory profiling with "Memory profiling takes" (utils/mem_utils.py),
  "Available KV cache memory" (v1/worker/gpu_worker.py), SGLang's "Memory pool end"
  (srt/mem_cache/kv_cache_configurator.py); CUDA-graph capture with "Graph capturing finished"
  (v1/worker/gpu_model_runner.py) and SGLang's "Capture ... cuda graph end"
  (model_runner_components/cuda_graph_setup.py). The server is ready at uvicorn's "Application startup
  complete", vLLM's "Starting vLLM API server" / "init engine (profile, create kv cache, warmup model) took",
  SGLang's "The server is fired up and ready to roll!" (srt/entrypoints/http_server.py).
- A phase is open when the last phase line of the log is its start or its progress bar (tqdm's
  "Loading safetensors checkpoint shards: 12% Completed", "Capturing CUDA graphs", SGLang's "Capturing
  batches", the streamer's "CPU Buffer size") and no end or ready line follows.
- A log that merely stops in an open phase is NOT a death: healthy boots are pasted cut anywhere (a question
  about a warning, a boot banner). It is read as one only with kill evidence after the phase began: a kill's
  mark (`KILL_MARKS`: SIGKILL exit codes 137 / -9, the shell's "Killed", "died unexpectedly", a pod's
  OOMKilled / Evicted / CrashLoopBackOff, absl's `*** SIGTERM received`), or the reporter's own words outside
  the log records that the process died, exited, restarted, was killed or stopped with no error
  (`DEATH_WORDS`, English and CJK), or a paste that holds nothing but one unfinished phase's own lines (at least
  MIN_PHASE_LINES of them: progress bars, the streamer's buffer allocations): what was pasted is where the log
  stopped, not a boot pasted up to a line of interest, which carries its banner, its configuration or the end
  of an earlier phase.
- A kill's mark alone, with no open phase, is read too (the phase is then "serving" when the server was ready),
  unless the server was told to stop before it (SHUTTING_DOWN: a stop sent SIGKILL after its grace period).

The finding is QD-R-HOST-PROCESS-KILLED at the kill's mark (else the phase's last line), its explanation
naming the phase and what the phase holds in memory, so that the killer can be found (dmesg / the journal's
OOM killer, the pod's lastState, the container's memory limit against the checkpoint being loaded). explain
reads this only in a pasted excerpt in which nothing else named a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Iterator

from remedies.crash import SHUTTING_DOWN, Crash, component_of, death, exception_line
from remedies.datalist import read_list
from remedies.loader import load_catalogue
from remedies.matcher import MAX_LINE, WRAP_SCAN_BYTES, Match
from remedies.model import UNKNOWN, Remedy
from remedies.normalise import normalise

KILLED_ID = "QD-R-HOST-PROCESS-KILLED"
MAX_MARK = 200  # characters: a kill's mark is a short notice, not a message that quotes one
# The entries that report a kill: a finding of one of them is told the phase the log stopped in.
KILL_ENTRIES = (KILLED_ID, "QD-R-HOST-OOM-KILLER", "QD-R-HOST-CONTAINER-OOM")


@dataclass(frozen=True)
class Phase:
    """A startup phase: the lines that show it running (its start, its progress bar) and the lines it ends with."""

    name: str
    running: re.Pattern[str]
    ends: re.Pattern[str]
    holds: str  # what the phase holds in memory, where a killer would look
    alone: bool = True  # whether a paste of nothing but this phase's lines is where a log stopped


DATA = Path(__file__).with_name("phases.yaml")


def _either(patterns: list[str], flags: int = 0) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), flags)


PHASES = tuple(Phase(item["name"], _either(item["running"]), _either(item["ends"]), item["holds"],
                     item.get("alone", True)) for item in read_list(DATA, "phases"))
READY = _either([item["pattern"] for item in read_list(DATA, "ready")])
KILL_MARKS = _either([item["pattern"] for item in read_list(DATA, "kill_marks")], re.I)
TERM = "SIGTERM"  # also how a server is stopped on purpose: its mark counts only while a startup phase is open
# tqdm's bar at its end: the phase's progress reached 100% (a finished bar is no open phase)
_DONE_BAR = re.compile(r"\b100% ?(?:Completed)?\s?\|")
# Markdown that frames a paste: fences, headings, rules
_FRAMING = re.compile(r"^\s*(?:```|~~~|#{1,6}\s|-{3,}\s*$|<details|</details|<summary)")
MIN_PHASE_LINES = 2
DEATH_WORDS = _either([item["pattern"] for item in read_list(DATA, "death_words")], re.I)


@dataclass(frozen=True)
class Stop:
    """Where a log stopped: the open phase (None when every phase it shows ended), its last line, the kill mark."""

    phase: Phase | None
    phase_line: int  # 1-based; 0 when no phase line
    mark_line: int  # 1-based line of the kill's mark; 0 when none
    ready: bool

    def sentence(self) -> str:
        """What the log shows of the death, for the finding's explanation."""
        if self.phase is None:
            return " The server was ready (serving) before it." if self.ready else ""
        return (f" This log stops while {self.phase.name} (its line {self.phase_line} began or reported it, and no "
                f"line says it finished): {self.phase.holds}.")


def _phase_of(text: str) -> tuple[Phase, bool] | None:
    """The phase a line belongs to and whether it ends it, or None."""
    for phase in PHASES:
        if phase.ends.search(text):
            return phase, True
    for phase in PHASES:
        if phase.running.search(text):
            return phase, bool(_DONE_BAR.search(text))
    return None


class Reading:
    """A log read line by line for where it stopped (see the module doc); `stop` after any line says so far."""

    def __init__(self) -> None:
        self.open_phase: Phase | None = None
        self.phase_line = self.mark_line = self.number = self.death_line = 0
        self.ready = self.stopping = self.said = False
        self.phase_lines = self.other_lines = 0
        self.seen: set[str] = set()  # the phases the lines belong to, and "ended" once one ended

    def read(self, raw: str) -> None:
        """Take the log's next line."""
        self.number += 1
        line = normalise(raw[:MAX_LINE])
        text = line.text
        if READY.search(text):
            self.ready, self.open_phase, self.phase_line, self.mark_line = True, None, 0, 0
            return
        found = _phase_of(text)
        if found is None and text.strip() and not _FRAMING.match(text):
            self.other_lines += 1
        if found is not None:
            self.phase_lines += 1
            phase, ended = found
            self.seen |= {phase.name, "ended"} if ended else {phase.name}
            self.open_phase, self.phase_line = (None, 0) if ended else (phase, self.number)
            self.mark_line = 0 if ended else self.mark_line
        mark = KILL_MARKS.search(text)
        if not (mark or self.stopping or self.death_line) and death(line) and not exception_line(text.strip()):
            self.death_line = self.number  # a process's death notice, not an exception (the crash scan's)
        if mark and not self.stopping and (self.open_phase is not None or TERM not in mark.group().upper()):
            self.mark_line = self.mark_line or self.number
        elif found is None and line.level is None and not line.record and DEATH_WORDS.search(text):
            self.said = True
        self.stopping = self.stopping or bool(SHUTTING_DOWN.search(text) and not mark)

    def stop(self) -> Stop | None:
        """Where the lines read so far show a death no line explains, or None."""
        if self.mark_line:
            return Stop(self.open_phase, self.phase_line, self.mark_line, self.ready)
        if self.open_phase is not None and (self.said or self.only_phase()):
            return Stop(self.open_phase, self.phase_line, 0, self.ready)
        return None

    def only_phase(self) -> bool:
        """The excerpt is nothing but startup phases' own lines (MIN_PHASE_LINES of them at least): what was pasted
        is where the log stopped, not a boot pasted up to a line of interest."""
        return (self.phase_lines >= MIN_PHASE_LINES and not self.other_lines and len(self.seen) == 1
                and self.open_phase is not None and self.open_phase.alone)


def stop_of(lines: list[str]) -> Stop | None:
    """Where a pasted excerpt's lines show a death no line explains (see the module doc), or None."""
    reading = Reading()
    for raw in lines:
        reading.read(raw)
    return reading.stop()


def kill_only(exception: str) -> bool:
    """Whether an unrecognised crash's exception is only a kill's mark (nothing of the process's own: not an
    exception the engine raised that mentions a death)."""
    return bool(KILL_MARKS.search(exception)) and len(exception) <= MAX_MARK and not exception_line(exception)


def silent_deaths(stream: BinaryIO) -> Iterator[Match]:
    """QD-R-HOST-PROCESS-KILLED for a pasted excerpt (at most WRAP_SCAN_BYTES) that stops in an open phase with
    kill evidence, or that carries a kill's mark (see the module doc)."""
    data = stream.read(WRAP_SCAN_BYTES + 1)[:WRAP_SCAN_BYTES]
    lines = data.decode("utf-8", errors="replace").split("\n")
    reading = Reading()
    for raw in lines:
        reading.read(raw)
    stop, entry = reading.stop(), load_catalogue().get(KILLED_ID)
    if stop is None and reading.death_line:
        yield _death(lines, reading.death_line)
        return
    if stop is None or entry is None:
        return
    at = stop.mark_line or stop.phase_line
    yield Match(told(entry, stop), at, lines[at - 1].strip()[:400], tuple(x.rstrip() for x in lines[max(0, at - 3):at - 1]),
                tuple(x.rstrip() for x in lines[at:at + 2]))


def _death(lines: list[str], number: int) -> Match:
    """A death line read on its own, as a crash: the record it continues (a log record printed just before it, by
    another process) hid it from the crash scan, which reads a record from its first line."""
    text = normalise(lines[number - 1][:MAX_LINE]).text.strip()[:400]
    crash = Crash(number, text, text, None, component_of((), text), "death")
    return Match(UNKNOWN, number, lines[number - 1].strip()[:400], crash=crash)


def told(entry: Remedy, stop: Stop) -> Remedy:
    """The entry with the phase the log stopped in added to its explanation."""
    return replace(entry, why=f"{entry.why.rstrip()}{stop.sentence()}")


def with_phase(entry: Remedy, lines: list[str] | None) -> Remedy:
    """A kill entry (KILL_ENTRIES) told the phase its log stopped in, when the log shows one; any other as it is."""
    if entry.id not in KILL_ENTRIES or not lines:
        return entry
    stop = stop_of(lines)
    if stop is None or stop.phase is None or stop.sentence() in entry.why:
        return entry
    return told(entry, stop)
