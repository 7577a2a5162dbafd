"""Everything the tool prints on stderr (errors, warnings, live progress) goes through redaction first.

`install(argv)` wraps `sys.stderr` in a line-buffered stream that redacts secrets in every line, shows control
characters as escapes, and, when the command line asks for `--redact-hosts`, pseudonymises hostnames and IP
addresses as well (this machine's name is known from the start; names that a report's redaction learns are
added as it runs: `doctor.redact_hosts`). Writing happens per complete line so that a secret split over two writes is still seen whole.
"""

from __future__ import annotations

import socket
import sys
from typing import Any, TextIO

from doctor.redact import redact_text
from doctor.redact_hosts import HostHider
from doctor.textsafe import visible

HOSTS_FLAG = "--redact-hosts"
_hider: HostHider | None = None


class RedactingStream:
    """A text stream that redacts each complete line before passing it to the wrapped stream."""

    def __init__(self, inner: TextIO, hider: HostHider | None) -> None:
        self.inner = inner
        self.hider = hider
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            lines, _, self._pending = self._pending.rpartition("\n")
            self.inner.write(self.clean(lines + "\n"))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self.inner.write(self.clean(self._pending))
            self._pending = ""
        self.inner.flush()

    def clean(self, text: str) -> str:
        """`text` redacted (and with hosts hidden when asked), escape sequences and control characters made
        visible as on stdout (`doctor.textsafe.visible`): a file name cannot repaint or hide the line."""
        text = redact_text(visible(text))
        return self.hider.hide(text) if self.hider is not None else text

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def hosts_requested(argv: list[str]) -> bool:
    """Whether `--redact-hosts` is on the command line (before a `--` that ends the options)."""
    for arg in argv:
        if arg == "--":
            return False
        if arg == HOSTS_FLAG:
            return True
    return False


def install(argv: list[str]) -> RedactingStream:
    """Wrap sys.stderr (once); hosts are hidden too when `argv` holds --redact-hosts."""
    global _hider
    if isinstance(sys.stderr, RedactingStream):
        return sys.stderr
    if hosts_requested(argv):
        _hider = HostHider(known=(socket.gethostname(),), shared=True)
    stream = RedactingStream(sys.stderr, _hider)
    sys.stderr = stream  # type: ignore[assignment]
    return stream

