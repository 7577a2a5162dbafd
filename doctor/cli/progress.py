"""Live progress of a long step on stderr: on a terminal one line redrawn in place (phase, elapsed time, the
server's last meaningful log line); without a terminal, or with NO_COLOR set, plain lines, one per event."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import time
from typing import Any, Iterator, TextIO

import click

from doctor.redact import redact_text

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def use_live_line(stream: TextIO) -> bool:
    """A redrawn line only on a terminal and without NO_COLOR (https://no-color.org)."""
    return stream.isatty() and "NO_COLOR" not in os.environ


class Progress:
    """Event lines always; a status line redrawn every `tick` seconds while live."""

    def __init__(self, stream: TextIO, live: bool, tick: float = 0.25) -> None:
        self.stream = stream
        self.live = live
        self.tick = tick
        self.started = time.monotonic()
        self.follower: Any = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._frame = 0
        self._drawn = False

    def watch(self, follower: Any) -> None:
        """Show this log follower's phase and last line in the status line."""
        self.follower = follower

    def event(self, message: str) -> None:
        """A permanent line (a phase entered, a matched log line, a stage's verdict)."""
        with self._lock:
            self._clear()
            click.echo(f"  {redact_text(message)}", file=self.stream)

    def status(self) -> str:
        elapsed = time.monotonic() - self.started
        f = self.follower
        phase = f.phase if f is not None else "starting"
        last = redact_text(f.last_line) if f is not None and f.last_line else ""
        return f"{phase} · {elapsed:.0f} s" + (f" · {last}" if last else "")

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[2K")
            self._drawn = False

    def _draw(self) -> None:
        width = shutil.get_terminal_size((100, 20)).columns
        line = f"{SPINNER[self._frame % len(SPINNER)]} {self.status()}"[: max(20, width - 1)]
        self._frame += 1
        with self._lock:
            self.stream.write("\r\x1b[2K" + line)
            self.stream.flush()
            self._drawn = True

    def _run(self) -> None:
        while not self._stop.wait(self.tick):
            self._draw()

    def start(self) -> None:
        if self.live:
            self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
        with self._lock:
            self._clear()
            self.stream.flush()


@contextlib.contextmanager
def progress_display(stream: TextIO | None = None) -> Iterator[Progress]:
    """A Progress on stderr for the duration of the block."""
    out = stream or sys.stderr
    p = Progress(out, use_live_line(out))
    p.start()
    try:
        yield p
    finally:
        p.close()
