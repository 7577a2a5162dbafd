"""Open a log source as a binary stream: a path (plain or gzip, detected by magic bytes) or '-' for stdin."""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from remedies.errors import LogReadError

GZIP_MAGIC = b"\x1f\x8b"
STDIN = "-"


@contextmanager
def open_log(source: str | Path) -> Iterator[BinaryIO]:
    """Yield a binary stream of the log's (decompressed) bytes; read errors become `LogReadError`."""
    name = str(source)
    try:
        if name == STDIN:
            raw: BinaryIO = _peekable(sys.stdin.buffer)
        else:
            path = Path(name)
            if path.is_dir():
                raise LogReadError(f"{name}: is a directory, not a log file")
            raw = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise LogReadError(f"{name}: cannot open: {exc.strerror or exc}") from None
    try:
        head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        stream: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if head == GZIP_MAGIC else raw  # type: ignore[assignment]
        yield _Guarded(stream, name)  # type: ignore[misc]
    finally:
        if name != STDIN:
            raw.close()


def check_readable(source: str | Path) -> None:
    """Raise `LogReadError` now for a source that cannot be opened, before any other is scanned."""
    name = str(source)
    if name == STDIN:
        return
    path = Path(name)
    if path.is_dir():
        raise LogReadError(f"{name}: is a directory, not a log file")
    if not path.is_file() or not os.access(path, os.R_OK):
        raise LogReadError(f"{name}: cannot open: {'permission denied' if path.exists() else 'no such file'}")
    share = binary_share(_head(path))
    if share > BINARY_LIMIT:
        raise LogReadError(f"{name}: not a text log ({share:.0%} of its first bytes are binary)")


SNIFF_BYTES = 64 * 1024
BINARY_LIMIT = 0.30
_TEXT_BYTES = bytes(range(32, 127)) + b"\t\n\r\x1b"


def binary_share(head: bytes) -> float:
    """Share of bytes in `head` that are neither printable ASCII, common whitespace/ANSI nor valid UTF-8 text.

    Logs with some junk in them are still logs; a file that is mostly binary (an image, a core dump) is not.
    """
    if not head:
        return 0.0
    text = head.decode("utf-8", errors="replace")
    odd = sum(1 for ch in text if ch == "\ufffd" or (ord(ch) < 128 and ch.encode() not in _TEXT_BYTES))
    return odd / len(text)


def _head(path: Path) -> bytes:
    """The first bytes of a log, decompressed when it is gzip; unreadable gzip is left to the scan to report."""
    with open(path, "rb") as fh:
        head = fh.read(SNIFF_BYTES)
    if head[:2] == b"\x1f\x8b":
        try:
            return zlib.decompressobj(wbits=31).decompress(head, SNIFF_BYTES)
        except zlib.error:
            return b""
    return head


def _peekable(stream: BinaryIO) -> BinaryIO:
    return stream if hasattr(stream, "peek") else io.BufferedReader(stream)  # type: ignore[arg-type]


class _Guarded:
    """A read-only stream whose decompression and I/O errors become `LogReadError` naming the source."""

    def __init__(self, stream: BinaryIO, name: str) -> None:
        self._stream = stream
        self._name = name

    def read(self, size: int = -1) -> bytes:
        return self._guard(self._stream.read, size)

    def readinto(self, buffer: memoryview | bytearray) -> int:
        return self._guard(self._stream.readinto, buffer)

    def _guard(self, call: Callable[[Any], Any], arg: Any) -> Any:
        try:
            return call(arg)
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise LogReadError(f"{self._name}: corrupt gzip data: {exc or 'truncated'}") from None
        except OSError as exc:
            raise LogReadError(f"{self._name}: read failed: {exc.strerror or exc}") from None
