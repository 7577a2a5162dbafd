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

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from doctor.errors import DoctorError
from doctor.outfile import kind_of

MiB = 1 << 20
BUNDLE_MAX_BYTES = 64 * MiB
CONFIG_MAX_BYTES = 4 * MiB
PROFILE_MAX_BYTES = 1 * MiB
LINT_MAX_BYTES = 4 * MiB
JSON_MAX_DEPTH = 64
JSON_MAX_INT_DIGITS = 100


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
    """`read_bytes` decoded as UTF-8; a decoding error names the byte offset."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {what} {path}: not UTF-8 text (byte {exc.start})") from None


class BadJSON(InputError):
    """Bytes that do not decode as JSON; `detail` is the decoder's own words, for callers that phrase it."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


def load_json(raw: bytes, what: str, name: str) -> Any:
    """Decode a JSON document read with `read_bytes`: at most JSON_MAX_DEPTH levels, integers of at most
    JSON_MAX_INT_DIGITS digits, finite numbers only (no NaN / Infinity / 1e999); InputError names the problem."""
    try:
        data = json.loads(raw.decode("utf-8"), parse_int=_bounded_int, parse_float=_finite_float,
                          parse_constant=_no_constant)
    except UnicodeDecodeError as exc:
        detail = f"not UTF-8 text at byte {exc.start}"
        raise BadJSON(f"{what} {name}: {detail}", detail) from None
    except json.JSONDecodeError as exc:
        raise BadJSON(f"{what} {name}: invalid JSON ({exc})", str(exc)) from None
    except _NumberError as exc:
        raise InputError(f"{what} {name}: {exc}") from None
    except RecursionError:
        raise InputError(f"{what} {name}: nested deeper than {JSON_MAX_DEPTH} levels") from None
    if _depth(data) > JSON_MAX_DEPTH:
        raise InputError(f"{what} {name}: nested deeper than {JSON_MAX_DEPTH} levels")
    return data


class _NumberError(ValueError):
    """A JSON number outside what the checks can use."""


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > JSON_MAX_INT_DIGITS:
        raise _NumberError(f"an integer with more than {JSON_MAX_INT_DIGITS} digits")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NumberError(f"number {text[:40]} is out of range")
    return value


def _no_constant(text: str) -> float:
    raise _NumberError(f"{text} is not a JSON number")


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
