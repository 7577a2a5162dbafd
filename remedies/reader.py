"""Open a log source as a binary stream: a path (plain or gzip, detected by magic bytes), a pipe or FIFO
(`explain <(zcat a.log)`), or '-' for stdin. Directories, sockets and block devices are refused; a source
whose first bytes are mostly binary (an image, /dev/zero) is refused, streams included."""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import time
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from doctor.compressed import refusal
from doctor.safeio import bounded_gzip_stream
from remedies.errors import LogReadError

GZIP_MAGIC = b"\x1f\x8b"
STDIN = "-"


@contextmanager
def open_log(source: str | Path) -> Iterator[BinaryIO]:
    """Yield a binary stream of the log's (decompressed) bytes; read errors become `LogReadError`.

    A source may be a regular file or a stream (stdin '-', a pipe such as `<(zcat log)`, a FIFO, a character
    device); a stream's first bytes are sniffed here, as `check_readable` cannot read them without consuming.
    """
    name = str(source)
    first = b""
    try:
        if name == STDIN:
            kind = "stream"
            raw: BinaryIO = sys.stdin.buffer
        else:
            kind = _kind(name)
            if kind == "fifo":
                raw, first = _open_fifo(name)
            else:
                raw = open(name, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise LogReadError(f"{name}: cannot open: {exc.strerror or exc}") from None
    try:
        if kind == "file":
            raw = _peekable(raw)
        else:
            raw = _sniffed(raw, name, first)
        head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        stream: BinaryIO = bounded_gzip_stream(raw, name) if head == GZIP_MAGIC else raw  # type: ignore[arg-type]
        yield _unicode_as_utf8(_Guarded(stream, name))  # type: ignore[misc]
    finally:
        if name != STDIN:
            raw.close()


def _unicode_as_utf8(stream: "_Guarded") -> BinaryIO:
    """A log with a UTF-16 / UTF-32 / UTF-8 byte-order mark as UTF-8 text (`doctor.unicode_text`); any other
    stream unchanged. Every stream here peeks: a file (`_peekable`), a sniffed stream and a gzip stream are all
    buffered readers."""
    from doctor.unicode_text import as_utf8, encoding_of

    found = encoding_of(stream.peek(4)[:4])
    if found is None:
        return stream  # type: ignore[return-value]
    stream.read(found[1])
    return as_utf8(stream, found[0])  # type: ignore[arg-type]


def check_readable(source: str | Path) -> None:
    """Raise `LogReadError` now for a source that cannot be opened, before any other is scanned.

    Regular files are sniffed for binary content here; streams (FIFOs, pipes, character devices) are only
    checked for their kind, since reading them would consume what the scan needs.
    """
    name = str(source)
    if name == STDIN or _kind(name) != "file":
        return
    if not os.access(name, os.R_OK):
        raise LogReadError(f"{name}: cannot open: permission denied")
    try:
        head = _head(Path(name))
    except OSError as exc:  # /proc/self/mem (EIO), a file on a failing disk or a vanished mount
        raise LogReadError(f"{name}: read failed: {exc.strerror or exc}") from None
    _refuse_binary(name, head)


def _kind(name: str) -> str:
    """'file' for a regular file, 'fifo' for a FIFO or pipe, 'device' for a character device; LogReadError
    for anything else."""
    try:
        mode = os.stat(name).st_mode
    except FileNotFoundError:
        raise LogReadError(f"{name}: cannot open: no such file") from None
    except (OSError, ValueError) as exc:
        raise LogReadError(f"{name}: cannot open: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISDIR(mode):
        raise LogReadError(f"{name}: is a directory, not a log file")
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISCHR(mode):
        return "device"
    from doctor.outfile import kind_of

    raise LogReadError(f"{name}: is {kind_of(mode)}, not a log file or stream")


FIFO_WRITER_WAIT_S = 10.0


def _open_fifo(name: str) -> tuple[BinaryIO, bytes]:
    """Open a FIFO or pipe without blocking and wait at most FIFO_WRITER_WAIT_S for a writer.

    A pipe from `<(cmd)` has its writer already; a named FIFO that nobody writes to is refused instead of
    blocking forever. Returns the stream (blocking from then on) and the bytes already read.
    """
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    deadline = time.monotonic() + FIFO_WRITER_WAIT_S
    first = b""
    try:
        while True:
            try:
                first = os.read(fd, SNIFF_BYTES)
            except BlockingIOError:
                break
            if first:
                break
            if time.monotonic() >= deadline:
                raise LogReadError(f"{name}: a FIFO that nobody writes to (waited {FIFO_WRITER_WAIT_S:g} s)")
            time.sleep(0.05)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return open(fd, "rb"), first


def _refuse_binary(name: str, head: bytes) -> None:
    packed = refusal(head)
    if packed:
        raise LogReadError(f"{name}: {packed}")
    if head and not head.strip(b"\0"):
        raise LogReadError(f"{name}: not a text log (its first {len(head):,} bytes are all NUL; a log truncated "
                           "while being written, as logrotate's copytruncate does, starts so: tr -d '\\000' drops them)")
    share = binary_share(head)
    if share > BINARY_LIMIT:
        raise LogReadError(f"{name}: not a text log ({share:.0%} of its first bytes are binary)")


def _sniffed(raw: BinaryIO, name: str, first: bytes = b"") -> BinaryIO:
    """A stream that replays its first SNIFF_BYTES (after `first`, read already) after refusing them when
    they are mostly binary."""
    head = bytearray(first)
    try:
        while len(head) < SNIFF_BYTES:
            piece = raw.read(SNIFF_BYTES - len(head))
            if not piece:
                break
            head += piece
    except OSError as exc:
        raise LogReadError(f"{name}: read failed: {exc.strerror or exc}") from None
    if head[:2] != GZIP_MAGIC:
        _refuse_binary(name, bytes(head))
    return io.BufferedReader(_Replay(bytes(head), raw, owns=name != STDIN))  # type: ignore[arg-type]


def replayed(head: bytes, rest: BinaryIO) -> BinaryIO:
    """A stream of bytes already read from `rest`, then the rest of it (which the caller keeps open)."""
    return io.BufferedReader(_Replay(head, rest, owns=False))  # type: ignore[return-value]


class _Replay(io.RawIOBase):
    """Bytes already read from a stream, then the rest of the stream."""

    def __init__(self, head: bytes, rest: BinaryIO, owns: bool) -> None:
        self._head = memoryview(head)
        self._rest = rest
        self._owns = owns

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if self._owns:
            self._rest.close()
        super().close()


SNIFF_BYTES = 64 * 1024
BINARY_LIMIT = 0.30
_TEXT_BYTES = bytes(range(32, 127)) + b"\t\n\r\x1b"


def binary_share(head: bytes) -> float:
    """Share of bytes in `head` that are neither printable ASCII, common whitespace/ANSI nor valid UTF-8 text.

    Logs with some junk in them are still logs; a file that is mostly binary (an image, a core dump) is not.
    NUL bytes are left out: a log written over a hole (logrotate's copytruncate, a crash) holds runs of them.
    """
    head = head.replace(b"\0", b"")
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

    def peek(self, size: int = 0) -> bytes:
        return self._guard(self._stream.peek, size)  # type: ignore[attr-defined]

    def _guard(self, call: Callable[[Any], Any], arg: Any) -> Any:
        try:
            return call(arg)
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise LogReadError(f"{self._name}: corrupt gzip data: {exc or 'truncated'}") from None
        except OSError as exc:
            raise LogReadError(f"{self._name}: read failed: {exc.strerror or exc}") from None
