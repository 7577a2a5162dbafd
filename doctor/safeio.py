"""Bounded reading of the files a user hands us: every read of user input goes through here.

Two kinds of input:
- Documents (a facts bundle, a model's config.json, a profile, a file to lint) are read whole, so they must be
  regular files under a size cap. The kind is checked with stat() before the file is opened, so a FIFO never
  blocks and a device such as /dev/zero is never read; the read itself stops one byte past the cap, so a file
  that grows meanwhile cannot eat memory either.
- Logs are streams: a regular file, a FIFO or pipe (`explain <(zcat log)`, `/dev/stdin`) or a character device
  are all fine, as `cat` would read them (a FIFO without a writer is given up after a bounded wait, see
  `remedies.reader`); a directory, socket or block device is refused. Their lines are
  bounded by the matcher (`remedies.matcher.MAX_LINE`), not by the file size.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import re
import zlib
import stat
from pathlib import Path
from typing import Any, BinaryIO

from doctor.compressed import refusal
from doctor.errors import DoctorError
from doctor.outfile import kind_of
from doctor.unicode_text import utf8_bytes

MiB = 1 << 20
BUNDLE_MAX_BYTES = 64 * MiB
CONFIG_MAX_BYTES = 4 * MiB
PROFILE_MAX_BYTES = 1 * MiB
LINT_MAX_BYTES = 4 * MiB
JSON_MAX_DEPTH = 64
JSON_MAX_INT_DIGITS = 100
# gzip input (bundles, logs): refused once it expands more than GZIP_MAX_RATIO times its compressed size (after
# the first GZIP_RATIO_FLOOR bytes, which any small file may reach) or past LOG_GZIP_MAX_BYTES for a log.
GZIP_MAX_RATIO = 250
GZIP_RATIO_FLOOR = 1 * MiB
LOG_GZIP_MAX_BYTES = 1024 * MiB
_GZIP_CHUNK = 256 * 1024


class InputError(DoctorError):
    """A user-supplied file that is the wrong kind, too big or unreadable: one line, exit 2."""


def read_bytes(path: str | Path, what: str, limit: int) -> bytes:
    """The whole content of the regular file `path`, refusing other kinds and files over `limit` bytes."""
    name = str(path)
    st = _stat(name, what)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"cannot read {what} {name}: it is {kind_of(st.st_mode)}, not a regular file")
    _check_size(name, what, st.st_size, limit)
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read {what} {name}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(f"cannot read {what} {name}: it changed into something other than a regular file")
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise InputError(f"cannot read {what} {name}: {exc.strerror or exc}") from None
    _check_size(name, what, len(data), limit)
    return data


def read_text(path: str | Path, what: str, limit: int) -> str:
    """`read_bytes` decoded as UTF-8; a decoding error names the byte offset, a compressed file its format."""
    data = read_bytes(path, what, limit)
    packed = refusal(data)
    if packed:
        raise InputError(f"cannot read {what} {path}: {packed}")

    try:
        return utf8_bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {what} {path}: not UTF-8 text (byte {exc.start})") from None


class BadJSON(InputError):
    """Bytes that do not decode as JSON; `detail` is the decoder's own words, for callers that phrase it."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


# A string (escapes honoured, possibly unterminated) or one bracket: what the depth scan steps over.
_JSON_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')


def nested_deeper(text: str, limit: int = JSON_MAX_DEPTH) -> bool:
    """Whether JSON text opens more than `limit` arrays / objects inside one another, found by one linear scan
    before any parser recurses (strings are stepped over, so brackets inside them do not count)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for m in _JSON_STRUCTURE.finditer(text):
        token = m.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return True
        elif token in "]}":
            depth -= 1
    return False


def parse_json(text: str, what: str) -> Any:
    """json.loads for JSON a user typed or a file held (a flag value, a notebook, a config): InputError (one
    line, exit 2) past JSON_MAX_DEPTH levels; invalid JSON raises json.JSONDecodeError as json.loads does."""
    if nested_deeper(text):
        raise InputError(f"{what}: nested deeper than {JSON_MAX_DEPTH} levels")
    return json.loads(text)


def read_json(path: str | Path, what: str, limit: int) -> Any:
    """A JSON file read with `read_bytes` and decoded with `load_json` (kind, size, depth and numbers bounded)."""
    return load_json(read_bytes(path, what, limit), what, str(path))


def load_json(raw: bytes | str, what: str, name: str, unique_keys: bool = False) -> Any:
    """Decode a JSON document read with `read_bytes`: at most JSON_MAX_DEPTH levels, integers of at most
    JSON_MAX_INT_DIGITS digits, finite numbers only (no NaN / Infinity / 1e999); with `unique_keys`, no object
    naming a key twice (which value counts differs between readers); InputError names the problem."""
    label = f"{what} {name}".rstrip()
    try:
        text = utf8_bytes(raw).decode("utf-8") if isinstance(raw, bytes) else raw.removeprefix("\ufeff")
        if nested_deeper(text):
            raise InputError(f"{label}: nested deeper than {JSON_MAX_DEPTH} levels")
        data = json.loads(text, parse_int=_bounded_int, parse_float=_finite_float, parse_constant=_no_constant,
                          object_pairs_hook=_unique_object if unique_keys else None)
    except UnicodeDecodeError as exc:
        packed = refusal(raw) if isinstance(raw, bytes) else None
        detail = packed or f"not UTF-8 text at byte {exc.start}"
        raise (InputError(f"{label}: {packed}") if packed else BadJSON(f"{label}: {detail}", detail)) from None
    except json.JSONDecodeError as exc:
        raise BadJSON(f"{label}: invalid JSON ({exc})", str(exc)) from None
    except _Refused as exc:
        raise InputError(f"{label}: {exc}") from None
    except RecursionError:
        raise InputError(f"{label}: nested deeper than {JSON_MAX_DEPTH} levels") from None
    if _depth(data) > JSON_MAX_DEPTH:
        raise InputError(f"{label}: nested deeper than {JSON_MAX_DEPTH} levels")
    return data


class BadReply(ValueError):
    """A server's reply that is not bounded JSON: a ValueError, so that an exercise or probe that reads it
    fails with this one line as it does on any reply that is not JSON."""


def reply_json(raw: bytes | str, what: str = "server reply") -> Any:
    """A JSON body from a server we do not trust (an engine, a hostile or broken proxy): the same bounds as a
    user's file (`load_json`: depth, integer digits, finite numbers) and no duplicate key, raised as `BadReply`."""
    try:
        return load_json(raw, what, "", unique_keys=True)
    except InputError as exc:
        raise BadReply(str(exc)) from None


class _Refused(ValueError):
    """A JSON value the checks refuse: a number out of range, a key given twice in one object."""


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise _Refused(f"the key {json.dumps(twice)[:80]} appears twice in one object")
    return obj


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > JSON_MAX_INT_DIGITS:
        raise _Refused(f"an integer with more than {JSON_MAX_INT_DIGITS} digits")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"number {text[:40]} is out of range")
    return value


def _no_constant(text: str) -> float:
    raise _Refused(f"{text} is not a JSON number")


def _depth(data: Any) -> int:
    """Nesting depth of decoded JSON, without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, level)
            if level <= JSON_MAX_DEPTH:
                stack.extend((v, level + 1) for v in (value.values() if isinstance(value, dict) else value))
    return deepest


def check_stream(path: str | Path, what: str = "log") -> os.stat_result:
    """Stat a streamed input (a log): regular files, FIFOs/pipes and character devices pass, others are refused."""
    name = str(path)
    st = _stat(name, what)
    mode = st.st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        raise InputError(f"cannot read {what} {name}: it is {kind_of(mode)}, not a log file or stream")
    return st


def _stat(name: str, what: str) -> os.stat_result:
    try:
        return os.stat(name)
    except FileNotFoundError:
        raise InputError(f"cannot read {what} {name}: no such file") from None
    except OSError as exc:
        raise InputError(f"cannot read {what} {name}: {exc.strerror or exc}") from None
    except ValueError:
        raise InputError(f"cannot read {what} {name!r}: not a valid path") from None


def _check_size(name: str, what: str, size: int, limit: int) -> None:
    if size > limit:
        raise InputError(f"cannot read {what} {name}: larger than the {_human(limit)} limit for a {what}")


def _human(size: int) -> str:
    return f"{size // MiB} MiB" if size >= MiB and size % MiB == 0 else f"{size} bytes"


def _bomb(what: str, name: str, out: int, consumed: int) -> InputError:
    return InputError(f"cannot read {what} {name}: gzip data expands more than {GZIP_MAX_RATIO} times "
                      f"({consumed} bytes to over {out}); decompress it yourself if it is genuine")


def gunzip(raw: bytes, what: str, name: str, limit: int) -> bytes:
    """Decompress a whole gzip document within `limit` bytes and GZIP_MAX_RATIO; zlib.error / EOFError for
    corrupt or truncated data (the caller words those)."""
    inflate = zlib.decompressobj(wbits=31)
    out: list[bytes] = []
    size = consumed = 0
    data = raw
    while data and not inflate.eof:
        before = len(data)
        chunk = inflate.decompress(data, _GZIP_CHUNK)
        data = inflate.unconsumed_tail
        consumed += before - len(data)
        size += len(chunk)
        out.append(chunk)
        if size > limit:
            raise InputError(f"cannot read {what} {name}: decompressed, larger than the {_human(limit)} limit "
                             f"for a {what}")
        if size > GZIP_RATIO_FLOOR and size > GZIP_MAX_RATIO * max(consumed, 1):
            raise _bomb(what, name, size, consumed)
    if not inflate.eof:
        raise EOFError("truncated gzip data")
    return b"".join(out)


class BoundedGzip(io.RawIOBase):
    """A gzip stream (a log) read through a counter: InputError once it expands more than GZIP_MAX_RATIO
    times what was read of it, or past `limit` bytes."""

    def __init__(self, raw: BinaryIO, name: str, what: str = "log", limit: int = LOG_GZIP_MAX_BYTES) -> None:
        super().__init__()
        self._counted = _Counted(raw)
        self._gz = gzip.GzipFile(fileobj=self._counted, mode="rb")
        self._name, self._what, self._limit = name, what, limit
        self._out = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._gz.read(len(buffer))
        self._out += len(data)
        if self._out > self._limit:
            raise InputError(f"cannot read {self._what} {self._name}: decompressed, larger than the "
                             f"{_human(self._limit)} limit for a {self._what}")
        if self._out > GZIP_RATIO_FLOOR and self._out > GZIP_MAX_RATIO * max(self._counted.count, 1):
            raise _bomb(self._what, self._name, self._out, self._counted.count)
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self._gz.close()
        super().close()


class _Counted(io.RawIOBase):
    """A binary stream that counts the bytes read from it."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self.raw = raw
        self.count = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.count += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def bounded_gzip_stream(raw: BinaryIO, name: str, what: str = "log") -> BinaryIO:
    """`BoundedGzip` buffered for line reading."""
    return io.BufferedReader(BoundedGzip(raw, name, what), buffer_size=_GZIP_CHUNK)  # type: ignore[return-value]
