"""Output files that cannot hurt: `-o` / `--output` / `--report` / `collect -o` all write through here.

Policy (the same for every command):
- The destination must be a regular file or a new path in an existing directory. A directory, device node
  (`/dev/null`, `/dev/full`), FIFO, socket, anything under /proc (`/dev/stdout` is a link to
  `/proc/self/fd/1`) or a symlink that leads to one of those or to nothing is refused: such a node is never
  replaced, and `-` is how a report goes to stdout.
- A symlink to a regular file is written through: the file it points to gets the new content (atomically,
  in that file's directory) and the link stays a link. No symlink is followed into anything else.
- As the kernel's fs.protected_symlinks and fs.protected_regular do, in a sticky world-writable directory
  (/tmp) a symlink is followed only when it belongs to us or to the directory's owner, and an existing file
  that belongs to someone else (not us, not the directory's owner) is not replaced: a root run cannot be
  steered onto another user's file.
- The final write never follows a symlink: the destination's directory is opened (O_DIRECTORY | O_NOFOLLOW),
  the temp file is created and renamed relative to that descriptor, and the entry is checked to still be the
  file that was resolved (a new path is linked in without replacing anything that appeared meanwhile).
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

import errno
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable

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
        parent = _physical_dir(os.path.dirname(path) or ".", name, what)
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
            _check_protected(name, what, parent, st, "a symlink")
            path, via_link = os.path.join(parent, os.readlink(path)), True
            continue
        if not stat.S_ISREG(st.st_mode):
            link = f" (a symlink to {path})" if via_link else ""
            raise OutputError(f"cannot write {what} {name}: it is {kind_of(st.st_mode)}{link}; {_ONLY}")
        _check_protected(name, what, parent, st, "a file")
        return Destination(name, path, st)
    raise OutputError(f"cannot write {what} {name}: too many levels of symbolic links")


def _physical_dir(folder: str, name: str, what: str) -> str:
    """`os.path.realpath(folder)`, but every symlink met on the way (a parent component such as /tmp/evil ->
    /etc) passes `_check_protected` first, as the kernel's path walk does: realpath reads links with
    readlink(), which protected_symlinks does not guard."""
    todo = [part for part in os.path.join(_cwd(name, what, folder), folder).split(os.sep)
            if part not in ("", ".")][::-1]
    resolved, links = os.sep, 0
    while todo:
        part = todo.pop()
        if part == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, part)
        try:
            st = os.lstat(candidate)
        except OSError:
            resolved = candidate  # missing or unreadable: the caller names it
            continue
        if not stat.S_ISLNK(st.st_mode):
            resolved = candidate
            continue
        links += 1
        if links > MAX_LINKS:
            raise OutputError(f"cannot write {what} {name}: too many levels of symbolic links")
        _check_protected(name, what, resolved, st, "a symlink")
        target = os.readlink(candidate)
        if target.startswith(os.sep):
            resolved = os.sep
        todo.extend(part for part in target.split(os.sep)[::-1] if part not in ("", "."))
    return resolved


def _cwd(name: str, what: str, folder: str) -> str:
    """The current directory a relative `folder` is in, or OutputError when it was deleted (getcwd fails)."""
    if folder.startswith(os.sep):
        return os.sep
    try:
        return os.getcwd()
    except OSError as exc:
        raise OutputError(f"cannot write {what} {name}: the current directory is gone "
                          f"({exc.strerror or exc}); give a path from an existing directory") from None


def _check_protected(name: str, what: str, parent: str, st: os.stat_result, kind: str) -> None:
    """Refuse `kind` (a symlink to follow, a file to replace) in a sticky world-writable directory when it
    belongs neither to us nor to the directory's owner (fs.protected_symlinks / fs.protected_regular)."""
    try:
        folder = os.stat(parent)
    except OSError:
        return
    shared = folder.st_mode & stat.S_ISVTX and folder.st_mode & stat.S_IWOTH
    if shared and st.st_uid not in (os.geteuid(), folder.st_uid):
        raise OutputError(f"refusing to write {what} {name}: it is {kind} owned by uid {st.st_uid} in the "
                          f"shared sticky directory {parent} (the kernel's protected_symlinks rule); "
                          "choose a path of your own")


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


def check_new(requested: str | Path, inputs: Iterable[str | Path | None] = (), what: str = "output") -> Destination:
    """`check_outputs` for a file the command creates and then writes as it goes (a server's log): one that
    exists is refused, never truncated, since what it held would be lost (and, appended to, its old lines would
    be read back as this run's)."""
    dest = check_outputs([requested], inputs, what)[0]
    if dest.existing is not None:
        raise OutputError(f"refusing to overwrite {what} {dest.requested}: the file exists "
                          "(name a new file, or move that one away)")
    return dest


def create_new(requested: str | Path, what: str = "output") -> BinaryIO:
    """A new file opened for writing: created here (O_EXCL) in a symlink-free directory, following no link, so
    nothing that exists (or appears meanwhile) is truncated or written through."""
    dest = check_new(requested, (), what)
    directory, base = os.path.split(dest.path)
    dir_fd = _open_dir_nofollow(directory, str(requested), what)
    try:
        fd = os.open(base, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
    except FileExistsError:
        raise OutputError(f"refusing to overwrite {what} {requested}: the file exists "
                          "(name a new file, or move that one away)") from None
    except OSError as exc:
        raise OutputError(f"cannot write {what} {requested}: {exc.strerror or exc}") from None
    finally:
        os.close(dir_fd)
    return os.fdopen(fd, "wb")


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
    dir_fd = _open_dir_nofollow(directory, requested, what)
    try:
        _write_in(dir_fd, base, payload, dest, requested, what)
        try:
            os.fsync(dir_fd)
        except OSError:
            pass
    finally:
        os.close(dir_fd)
    return dest.existing is not None


def _open_dir_nofollow(directory: str, requested: str, what: str) -> int:
    """A descriptor of the resolved (symlink-free) `directory`, opened one component at a time from / with
    O_NOFOLLOW: a component swapped for a symlink since it was resolved (a race in a shared directory) is
    refused (ELOOP / ENOTDIR) instead of followed, whatever fs.protected_symlinks says."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(os.sep, flags)
    try:
        for part in (p for p in directory.split(os.sep) if p):
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                swapped = exc.errno in (errno.ELOOP, errno.ENOTDIR)
                reason = "a component changed into a symlink while writing" if swapped else exc.strerror or exc
                raise OutputError(f"cannot write {what} {requested}: {reason}") from None
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_in(dir_fd: int, base: str, payload: bytes, dest: Destination, requested: str, what: str) -> None:
    """Temp file, fsync, then into place, all relative to the directory descriptor, following no symlink."""
    try:
        fd, tmp = _create_temp(dir_fd, base)
    except OSError as exc:
        raise OutputError(f"cannot write {what} {requested}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            if dest.existing is not None:
                _keep_attributes(fh.fileno(), dest.existing)
            os.fsync(fh.fileno())
        for _ in range(3):
            if not _entry_now(dir_fd, base, dest, requested, what):
                os.replace(tmp, base, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                break
            try:
                _link_new(dir_fd, tmp, base)
                break
            except FileExistsError:
                continue  # another writer's file appeared: judge it like any existing entry
        else:
            raise OutputError(f"cannot write {what} {requested}: the path keeps changing while being written")
    except BaseException as exc:
        _unlink_quietly(tmp, dir_fd)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write {what} {requested}: {exc.strerror or exc}") from None
        raise


def _link_new(dir_fd: int, tmp: str, base: str) -> None:
    """Put the temp file at a new path without replacing anything that appeared there meanwhile (a hard link
    fails on an existing name); a file system without hard links gets a rename."""
    try:
        os.link(tmp, base, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
            raise
        os.replace(tmp, base, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return
    os.unlink(tmp, dir_fd=dir_fd)


def _entry_now(dir_fd: int, base: str, dest: Destination, requested: str, what: str) -> bool:
    """True when the entry is absent (link the new file in); False when it may be replaced: the regular file
    that was resolved, or one of ours that a concurrent writer put there. Anything else (a symlink, a file of
    another user) appeared while writing: OutputError, nothing is replaced."""
    try:
        now = os.stat(base, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return True
    if stat.S_ISREG(now.st_mode) and ((now.st_dev, now.st_ino) == dest.identity or now.st_uid == os.geteuid()):
        return False
    raise OutputError(f"cannot write {what} {requested}: it changed while being written (now "
                      f"{kind_of(now.st_mode) if not stat.S_ISLNK(now.st_mode) else 'a symlink'}); "
                      "nothing was replaced")


def _create_temp(dir_fd: int, base: str) -> tuple[int, str]:
    """A new file `.<base>.<random>.tmp` in the directory `dir_fd`, created exclusively (never through a
    symlink) with mode 0666 & ~umask; (descriptor, name relative to dir_fd)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
    for _ in range(100):
        tmp = f".{base[:200]}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, flags, 0o666, dir_fd=dir_fd), tmp
        except FileExistsError:
            continue
    raise OSError("no free temporary name in the output directory")


def _keep_attributes(fd: int, old: os.stat_result) -> None:
    """Give the new file the replaced file's permission bits, and its owner where we may (as root)."""
    os.fchmod(fd, stat.S_IMODE(old.st_mode))
    if hasattr(os, "fchown") and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.fchown(fd, old.st_uid, old.st_gid)
        except PermissionError:
            pass


def _unlink_quietly(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass
