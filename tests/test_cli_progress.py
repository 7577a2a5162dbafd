"""The live progress line: redrawn in place on a terminal, plain event lines otherwise or with NO_COLOR."""

from __future__ import annotations

import io
import re
import time

from doctor.cli.progress import Progress, use_live_line
from doctor.deploy.follower import LogFollower


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_live_line_unless_no_color(monkeypatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_live_line(Tty()) and not use_live_line(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_live_line(Tty())


def test_the_live_line_shows_phase_elapsed_and_the_last_meaningful_log_line() -> None:
    out = Tty()
    p = Progress(out, live=True, tick=0.05)
    follower = LogFollower("vllm")
    p.watch(follower)
    follower.feed("(Worker pid=2) INFO [cpu_model_runner.py:68] Starting to load model /m...", 1)
    follower.feed('INFO:     127.0.0.1:5000 - "GET /health HTTP/1.1" 503', 2)  # our own poll: not progress
    p.start()
    time.sleep(0.3)
    p.event("phase: loading weights (1 s)")
    p.close()
    text = out.getvalue()
    assert "\r\x1b[2K" in text
    assert re.search(r"loading weights · \d+ s · \(Worker pid=2\) INFO", text)  # the elapsed seconds, as the clock says
    assert "GET /health" not in text.split("phase: loading weights")[0]
    assert text.endswith("\r\x1b[2K") or text.rstrip().endswith("(1 s)")


def test_without_a_terminal_only_plain_event_lines_are_written() -> None:
    out = io.StringIO()
    p = Progress(out, live=False)
    p.start()
    p.event("phase: ready (3 s)")
    p.close()
    assert out.getvalue() == "  phase: ready (3 s)\n"
