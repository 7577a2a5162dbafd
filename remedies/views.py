"""The sources of one `explain` run as its scans read them: a pasted excerpt with its layers peeled.

A regular file of at most WRAP_SCAN_BYTES (`remedies.matcher`: a pasted excerpt, a short log; gzip
included) is read once and unwrapped (`remedies.layers`); when it was wrapped in anything, every scan of
it reads the unwrapped lines, and line numbers are told in the source's own numbering (`source_line`).
Bigger logs are machine-written and are scanned as they are, as are streams.
"""

from __future__ import annotations

import io
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from remedies.errors import LogReadError
from remedies.layers import View, unwrap
from remedies.matcher import WRAP_SCAN_BYTES
from remedies.reader import STDIN, open_log, replayed


class Sources:
    """Each source's view (its unwrapped lines) when it has one, computed once."""

    def __init__(self) -> None:
        self._views: dict[str, View | None] = {}

    def view(self, source: str | Path) -> View | None:
        """The unwrapped view of a small regular file (or of standard input, once it was opened) wrapped in
        some layer, else None."""
        name = str(source)
        if name == STDIN:
            return self._views.get(name)
        if name not in self._views:
            self._views[name] = _read_view(name) if excerpt(name) else None
        return self._views[name]

    @contextmanager
    def open(self, source: str | Path) -> Iterator[BinaryIO]:
        """A binary stream of the source as the scans read it (its view, else the log itself). Standard input
        is read once: at most WRAP_SCAN_BYTES of it are unwrapped as an excerpt, more is streamed as it is."""
        if str(source) == STDIN and STDIN not in self._views:
            with open_log(source) as stream:
                head = stream.read(WRAP_SCAN_BYTES + 1)
                if len(head) > WRAP_SCAN_BYTES:
                    self._views[STDIN] = None
                    yield replayed(head, stream)
                    return
                view = self._views[STDIN] = unwrap(head.decode("utf-8", "replace"))
                yield io.BytesIO(head if view is None else view.text().encode("utf-8", "replace"))
                return
        view = self.view(source)
        if view is None:
            with open_log(source) as stream:
                yield stream
        else:
            yield io.BytesIO(view.text().encode("utf-8", "replace"))

    def lines(self, source: str | Path) -> list[str] | None:
        """The view's lines, for reading around a finding (`remedies.rootcause`), or None without a view."""
        view = self.view(source)
        return None if view is None else list(view.lines)

    def source_line(self, source: str | Path, lineno: int) -> int:
        """The source's own number of a line the scans numbered `lineno`."""
        view = self.view(source)
        return lineno if view is None else view.source_line(lineno)


def excerpt(source: str | Path) -> bool:
    """Whether a source is a regular file small enough to be a pasted excerpt (see `Matcher.scan_retyped`)."""
    if str(source) == STDIN:
        return False
    try:
        return Path(source).is_file() and Path(source).stat().st_size <= WRAP_SCAN_BYTES
    except OSError:
        return False


def _read_view(name: str) -> View | None:
    try:
        with open_log(name) as stream:
            data = stream.read(WRAP_SCAN_BYTES * 8 + 1)
    except LogReadError:
        return None  # the scan opens it again and reports the error
    if len(data) > WRAP_SCAN_BYTES * 8:
        return None
    return unwrap(data.decode("utf-8", "replace"))
