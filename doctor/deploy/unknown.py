"""QD-R-UNKNOWN for a deployment: explain's crash analysis over the log lines the follower matched."""

from __future__ import annotations

import io
from itertools import islice
from pathlib import Path
from typing import BinaryIO, Iterator

from doctor.deploy.remedy import RemedyHit, hit_of
from remedies import Matcher
from remedies.explain import unrecognised_crash


class _FirstLines(io.RawIOBase):
    """The first `lines` lines of a binary stream (all of it for None), read as a stream; each read
    fills as much of the buffer as there is, so the scanner's chunks end where a file's would."""

    def __init__(self, raw: BinaryIO, lines: int | None) -> None:
        self._lines: Iterator[bytes] = iter(raw) if lines is None else islice(raw, lines)
        self._rest = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        size, filled = len(buffer), 0
        while filled < size:
            if not self._rest:
                self._rest = next(self._lines, b"")
                if not self._rest:
                    break
            n = min(size - filled, len(self._rest))
            buffer[filled:filled + n] = self._rest[:n]
            self._rest, filled = self._rest[n:], filled + n
        return filled


def unknown_crash(log_path: Path, lines: int | None, matcher: Matcher | None = None) -> RemedyHit | None:
    """The QD-R-UNKNOWN hit for the first `lines` lines of the server log (None: all of them), or None
    when the log holds no fatal event or an entry other than a wrapper named an error."""
    try:
        with log_path.open("rb") as raw:
            found = unrecognised_crash(_FirstLines(raw, lines), str(log_path), matcher)
    except OSError:
        return None
    return hit_of(found) if found is not None else None
