"""Output files that cannot hurt: `-o` / `--output` / `--report` / `collect -o` all write through here.

Policy (the same for every command):
- The destination must be a regular file or a new path in an existing directory. A directory, device node
  (`/dev/null`, `/dev/full`), FIFO, socket, anything under /proc (`/dev/stdout` is a link to
  `/proc/self/fd/1`) or a symlink that leads to one of those or to nothing is refused: such a node is never
  replaced, and `-` is how a report goes to stdout.
- A symlink to a regular file is written through: the file it points to gets the new content (atomically,
  in that file's directory) and the link stays a link. No symlink is followed into anything else.
- The destination may not be the same file (st_dev, st_ino) as any input of the command, nor be given twice.
- Writes are atomic: a temp file with a unique name in the destination's directory, fsynced, then renamed
  over the destination, so concurrent writers to one path all succeed (the last rename wins) and an
  interrupted write leaves the old file whole. A replaced file keeps its permission bits (and, as root,
  its owner); a new file gets 0666 less the umask, like any file the shell creates.
- A read-only file (no write bit, or not writable by us) is not replaced, even by root; a directory we cannot
  write into is refused before the command runs (the atomic write needs a temp file there).
- Replacing an existing file is allowed and reported: `write_file` returns True and the command says
  "replaced" on stderr.
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from doctor.errors import DoctorError

MAX_LINKS = 40
_PROC = "/proc"
_ONLY = "only a regular file or a new path is written ('-' is stdout)"
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


class OutputError(DoctorError):
    """An output path that would destroy something: one line, exit 2."""


@dataclass(frozen=True)
class Destination:
    """Where an output lands: `path` is the regular file (or new path) after resolving symlinks."""

    requested: str
    path: str
    existing: os.stat_result | None

    @property
    def identity(self) -> tuple[int, int] | None:
        """(st_dev, st_ino) of the file that would be replaced, None for a new path."""
        return (self.existing.st_dev, self.existing.st_ino) if self.existing else None


def kind_of(mode: int) -> str:
    """'a directory', 'a FIFO (named pipe)', ... for a non-regular st_mode; 'a regular file' otherwise."""
    return next((name for test, name in _KINDS if test(mode)), "a regular file")


def resolve(requested: str | Path, what: str = "output") -> Destination:
    """The destination of `requested`, or OutputError when writing there could replace a non-file."""
    name = str(requested)
    if not name or name.endswith(os.sep):
        raise OutputError(f"cannot write {what} {name!r}: not a file name")
    path, via_link = name, False
    for _ in range(MAX_LINKS):
        parent = os.path.realpath(os.path.dirname(path) or ".")
        path = os.path.join(parent, os.path.basename(path))
        if path == _PROC or path.startswith(_PROC + os.sep):
            raise OutputError(f"cannot write {what} {name}: {_proc_kind(name)}; {_ONLY}")
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            if via_link:
                raise OutputError(f"cannot write {what} {name}: it is a symlink to a missing file ({path})") from None
            if not os.path.isdir(parent):
                raise OutputError(f"cannot write {what} {name}: directory {parent} does not exist") from None
            return Destination(name, path, None)
        except NotADirectoryError:
            raise OutputError(f"cannot write {what} {name}: {os.path.dirname(name)} is not a directory") from None
        except OSError as exc:
            raise OutputError(f"cannot write {what} {name}: {exc.strerror or exc}") from None
        if stat.S_ISLNK(st.st_mode):
            path, via_link = os.path.join(parent, os.readlink(path)), True
            continue
        if not stat.S_ISREG(st.st_mode):
            link = f" (a symlink to {path})" if via_link else ""
            raise OutputError(f"cannot write {what} {name}: it is {kind_of(st.st_mode)}{link}; {_ONLY}")
        return Destination(name, path, st)
    raise OutputError(f"cannot write {what} {name}: too many levels of symbolic links")


def _proc_kind(name: str) -> str:
    try:
        mode = os.stat(name).st_mode
    except OSError:
        return "it is under /proc"
    return f"it is {kind_of(mode)}" if not stat.S_ISREG(mode) else "it is a /proc file-descriptor link"


def check_outputs(requested: Iterable[str | Path], inputs: Iterable[str | Path | None] = (),
                  what: str = "output") -> list[Destination]:
    """Resolve every output and refuse one that is an input, a non-file, or given twice; nothing is written."""
    input_ids = _identities(inputs)
    seen: dict[tuple[str, ...], str] = {}
    out = []
    for item in requested:
        dest = resolve(item, what)
        if dest.identity is not None and dest.identity in input_ids:
            raise OutputError(f"refusing to write {what} {dest.requested}: it is the input "
                              f"{input_ids[dest.identity]} of this command (choose another path)")
        if dest.existing is not None and (not dest.existing.st_mode & 0o222 or not os.access(dest.path, os.W_OK)):
            raise OutputError(f"cannot write {what} {dest.requested}: the existing file is read-only")
        directory = os.path.dirname(dest.path)
        if not os.access(directory, os.W_OK | os.X_OK):
            raise OutputError(f"cannot write {what} {dest.requested}: directory {directory} is not writable")
        key = (str(dest.identity),) if dest.identity else (dest.path,)
        if key in seen:
            raise OutputError(f"{what} {dest.requested} is given twice (also as {seen[key]})")
        seen[key] = dest.requested
        out.append(dest)
    return out


def _identities(inputs: Iterable[str | Path | None]) -> dict[tuple[int, int], str]:
    ids: dict[tuple[int, int], str] = {}
    for item in inputs:
        if item is None or str(item) in ("", "-"):
            continue
        try:
            st = os.stat(item)
        except (OSError, ValueError):
            continue
        ids.setdefault((st.st_dev, st.st_ino), str(item))
    return ids


def write_file(target: str | Path | Destination, data: bytes | str, inputs: Iterable[str | Path | None] = (),
               what: str = "output") -> bool:
    """Write `data` atomically to the destination; True when an existing file was replaced.

    The destination is checked again just before writing (it may have changed since `check_outputs`).
    """
    requested = target.requested if isinstance(target, Destination) else str(target)
    dest = check_outputs([requested], inputs, what)[0]
    payload = data.encode("utf-8") if isinstance(data, str) else data
    directory, base = os.path.split(dest.path)
    try:
        fd, tmp = _create_temp(directory, base)
    except OSError as exc:
        raise OutputError(f"cannot write {what} {requested}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            if dest.existing is not None:
                _keep_attributes(fh.fileno(), dest.existing)
            os.fsync(fh.fileno())
        resolve(requested, what)
        os.replace(tmp, dest.path)
    except BaseException as exc:
        _unlink_quietly(tmp)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write {what} {requested}: {exc.strerror or exc}") from None
        raise
    _fsync_directory(directory)
    return dest.existing is not None


def _create_temp(directory: str, base: str) -> tuple[int, str]:
    """A new file `.<base>.<random>.tmp` next to the destination, created exclusively with mode 0666 & ~umask."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        tmp = os.path.join(directory, f".{base[:200]}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {directory}")


def _keep_attributes(fd: int, old: os.stat_result) -> None:
    """Give the new file the replaced file's permission bits, and its owner where we may (as root)."""
    os.fchmod(fd, stat.S_IMODE(old.st_mode))
    if hasattr(os, "fchown") and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.fchown(fd, old.st_uid, old.st_gid)
        except PermissionError:
            pass


def _fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
