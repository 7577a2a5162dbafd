"""Follows the server log as it arrives: start-up phase, KV capacity, matched remedies, an excerpt."""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from typing import Callable

from doctor.deploy.phases import PhaseTable, phase_table
from doctor.deploy.remedy import RemedyHit, RemedyWatch, ranked

ProgressSink = Callable[[str], None]
# Lines that say nothing about progress: uvicorn access lines (qwen-doctor's own /health polls) and
# periodic throughput stats.
_CHATTER = re.compile(r'"(GET|POST) /|HTTP/1\.[01]" \d{3}|Avg prompt throughput|Engine \d+: Avg')


class LogFollower:
    """Thread-safe state built from log lines; `feed` is the ServerProcess line sink."""

    def __init__(self, backend: str, watch: RemedyWatch | None = None, progress: ProgressSink | None = None,
                 head: int = 20, tail: int = 60, table: PhaseTable | None = None) -> None:
        self.table = table or phase_table(backend)
        self.watch = watch or RemedyWatch()
        self.progress = progress
        self.phase_index = -1
        self.phase_times: dict[str, float] = {}
        self.kv_tokens: int | None = None
        self.kv_line: str | None = None
        self.lines = 0
        self.head: list[str] = []
        self.tail: deque[str] = deque(maxlen=tail)
        self._head_size = head
        self._lock = threading.Lock()
        self._fatal = threading.Event()
        self._stopping = False
        self._started = time.monotonic()
        self.last_line: str = ""
        self.last_line_at: float | None = None
        self.shutdown_line: int | None = None
        self.before_shutdown: list[str] = []

    def mark_shutdown(self) -> None:
        """From now on the server is being stopped on purpose: its lines are kept, not matched
        (vLLM 0.32 prints an EngineDeadError during a clean SIGTERM shutdown), and the tail logged so
        far is kept as the evidence of how far the server got."""
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
            self.shutdown_line = self.lines
            self.before_shutdown = [*self.head, *self.tail][-15:]

    @property
    def stopping(self) -> bool:
        return self._stopping

    def quiet_for(self) -> float | None:
        """Seconds since the last meaningful log line (None before any)."""
        return None if self.last_line_at is None else time.monotonic() - self.last_line_at

    @property
    def phase(self) -> str:
        return self.table.names[self.phase_index] if self.phase_index >= 0 else "launching"

    @property
    def fatal_seen(self) -> bool:
        return self._fatal.is_set()

    @property
    def remedies(self) -> list[RemedyHit]:
        """Matched entries in explain's order (errors first, root causes first, then log order)."""
        return ranked(self.watch.hits)

    def feed(self, line: str, lineno: int) -> None:
        """Consume one log line."""
        with self._lock:
            self.lines = lineno
            if not self._stopping and not _CHATTER.search(line):
                self.last_line, self.last_line_at = line.strip(), time.monotonic()
            if len(self.head) < self._head_size:
                self.head.append(line)
            else:
                self.tail.append(line)
            index = self.table.phase_of(line)
            entered = None
            if index is not None and index > self.phase_index:
                self.phase_index = index
                entered = self.table.names[index]
                self.phase_times[entered] = round(time.monotonic() - self._started, 1)
            tokens = self.table.kv_tokens_in(line)
            if tokens is not None and self.kv_tokens is None:
                self.kv_tokens, self.kv_line = tokens, line.strip()
            new = [] if self._stopping else self.watch.feed(line, lineno)
        if entered and self.progress:
            self.progress(f"phase: {entered} ({self.phase_times[entered]:.0f} s)")
        for hit in new:
            if self.progress:
                self.progress(f"log line {hit.lineno} matches {hit.id}: {hit.title}")
            if hit.fatal:
                self._fatal.set()

    def excerpt(self) -> list[str]:
        """The first and last lines of the log (with a marker where lines were left out)."""
        with self._lock:
            skipped = self.lines - len(self.head) - len(self.tail)
            gap = [f"... {skipped} lines ..."] if skipped > 0 else []
            return [*self.head, *gap, *self.tail]
