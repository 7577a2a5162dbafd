"""Standard streams that cannot change a command's outcome: closed, failing or narrow-charset stdin/stdout/stderr.

`install()` runs first thing in `main`:
- a standard descriptor (0, 1, 2) that the caller closed (`cmd >&-`, `2>&-`, `<&-`) is reopened on /dev/null,
  so that the command runs as it would have, writes its `-o` files and keeps its own exit code (Python would
  otherwise leave `sys.stdout` as None, and exit 120 when its final flush fails);
- stdout and stderr are wrapped in `SafeStream`: a write that fails (EPIPE from `| head`, ENOSPC from
  `>/dev/full`, EIO from a vanished terminal) parks the descriptor on /dev/null and is dropped, never raised, so
  the command goes on to its end. A reader that stopped reading (EPIPE) chose to: the command keeps its own
  exit code. Any other failure lost output nobody chose to lose (`collect > bundle.json` on a full disk):
  `lost_stdout` names it, and `main` ends the command with that one line and exit 2, not a success;
- text is encoded in the stream's own charset (PYTHONIOENCODING, a non-UTF-8 locale) with what it cannot hold
  written as backslash escapes, never a UnicodeEncodeError.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from typing import Any, TextIO

_STD_FDS = (0, 1, 2)


def reopen_closed_fds() -> list[int]:
    """Open /dev/null on each standard descriptor that is closed; the descriptors reopened."""
    reopened = []
    for fd in _STD_FDS:
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        reopened.append(fd)
    return reopened


class SafeStream(io.TextIOBase):
    """A text stream over `inner` whose writes never raise: the first failing write or flush parks the
    descriptor on /dev/null (nothing more is attempted), and characters the charset lacks are escaped."""

    def __init__(self, inner: TextIO, fd: int | None) -> None:
        super().__init__()
        self.inner = inner
        self.fd = fd
        self.failed = False
        self.error: OSError | None = None
        charset = getattr(inner, "encoding", None) or "utf-8"
        self.charset = charset
        self._narrow = charset.replace("_", "-").lower() not in ("utf-8", "utf8")

    @property
    def encoding(self) -> str:  # type: ignore[override]
        """Always a Unicode charset: click then writes text here instead of around us to the raw buffer."""
        return "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        return "strict"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if self.failed:
            return len(text)
        shown = text.encode(self.charset, "backslashreplace").decode(self.charset) if self._narrow else text
        try:
            self.inner.write(shown)
        except UnicodeEncodeError:
            self._write_escaped(text)
        except (OSError, ValueError) as exc:
            self._park(exc)
        return len(text)

    def _write_escaped(self, text: str) -> None:
        try:
            self.inner.write(text.encode("ascii", "backslashreplace").decode("ascii"))
        except (OSError, ValueError) as exc:
            self._park(exc)

    def flush(self) -> None:
        if self.failed:
            return
        try:
            self.inner.flush()
        except (OSError, ValueError) as exc:
            self._park(exc)

    def _park(self, exc: Exception) -> None:
        """Stop writing to a stream that failed: its descriptor now points at /dev/null."""
        self.failed = True
        self.error = exc if isinstance(exc, OSError) else None
        if self.fd is None:
            return
        try:
            null = os.open(os.devnull, os.O_WRONLY)
        except OSError:
            return
        try:
            os.dup2(null, self.fd)
        except OSError:
            pass
        finally:
            os.close(null)

    def isatty(self) -> bool:
        if self.failed:
            return False
        try:
            return bool(self.inner.isatty())
        except (OSError, ValueError, AttributeError):
            return False

    def fileno(self) -> int:
        if self.fd is None:
            raise io.UnsupportedOperation("no file descriptor")
        return self.fd

    def close(self) -> None:
        self.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def lost_stdout() -> str | None:
    """Why what the command wrote to stdout was lost (`No space left on device`), after flushing it; None when
    it was written, or when its reader stopped reading (EPIPE: `| head`)."""
    stdout = sys.stdout
    if not isinstance(stdout, SafeStream):
        return None
    stdout.flush()
    error = stdout.error
    if error is None or error.errno == errno.EPIPE:
        return None
    return error.strerror or str(error)


def _fd_of(stream: Any) -> int | None:
    try:
        return int(stream.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


def _text_stream(fd: int, mode: str) -> TextIO:
    return open(fd, mode, encoding="utf-8", errors="backslashreplace", closefd=False,  # noqa: SIM115
                buffering=1 if mode == "w" else -1)


def install() -> None:
    """Reopen closed standard descriptors and make stdout / stderr safe (once; idempotent). A stream Python
    found closed at start-up whose descriptor something else has taken since is pointed at /dev/null."""
    reopened = set(reopen_closed_fds())
    for name, fd, mode in (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w")):
        stream = getattr(sys, name)
        if isinstance(stream, SafeStream):
            continue
        if stream is None:
            stream = _text_stream(fd, mode) if fd in reopened else open(os.devnull, mode)  # noqa: SIM115
        if mode == "w":
            stream = SafeStream(stream, _fd_of(stream))
        setattr(sys, name, stream)
