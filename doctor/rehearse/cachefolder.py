"""A rehearsal folder in the cache: reused only when it is ours alone and holds what we would write, otherwise
built beside it; always written whole (a temporary folder of ours renamed into place), so a cache in a shared
folder (`XDG_CACHE_HOME=/tmp`) can neither hand a root run someone else's files nor steer its writes through their
symlinks (doctor/cachedir.py's `private_folder`)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, TypeVar

from doctor.cachedir import private_folder

Found = TypeVar("Found")


def _candidates(path: Path) -> tuple[Path, Path]:
    return path, path.with_name(f"{path.name}-uid{os.geteuid()}")


def reuse(path: Path, read: Callable[[Path], Found | None]) -> tuple[Path, Found] | None:
    """(folder, what `read` found in it) of the first private folder at `path` (or ours beside it) that `read`
    accepts, or None."""
    for candidate in _candidates(path):
        if private_folder(candidate):
            found = read(candidate)
            if found is not None:
                return candidate, found
    return None


def fresh(path: Path) -> Path:
    """Where to build the folder for `path`: `path` itself when nothing is there, else a name beside it."""
    if not os.path.lexists(path):
        return path
    beside = _candidates(path)[1]
    if not os.path.lexists(beside):
        return beside
    beside.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=beside.name + "-", dir=beside.parent))


def write_whole(path: Path, files: dict[str, bytes], done: str) -> None:
    """Write `files` into a temporary folder of ours beside `path`, then rename it to `path`; when another
    process renamed its own first (its `done` file is there), keep theirs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=path.name + ".", dir=path.parent))
    tmp.chmod(0o755)
    try:
        for fname, content in files.items():
            (tmp / fname).write_bytes(content)
        try:
            tmp.rename(path)
        except OSError:
            if not (path / done).is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
