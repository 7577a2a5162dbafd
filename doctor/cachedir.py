"""Where qwen-doctor keeps what it can rebuild (parsed templates, compiled validators, rehearsal checkpoints).

$QWEN_DOCTOR_CACHE, else $XDG_CACHE_HOME/qwen-doctor (XDG Base Directory Specification), else
~/.cache/qwen-doctor. A cache under a home directory that does not exist is no cache: the tool does not create the
home of a service account whose HOME names nothing (`HOME=/nonexistent`, Debian's convention for system users).

What the cache holds can be code (compiled validators): a file in it is read, and one is written, only inside a
folder that is ours and that no one else may write into (`private_folder`), so a cache pointed at a shared folder
(`XDG_CACHE_HOME=/tmp`) cannot hand a root run someone else's code or steer its writes through their symlinks.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Mapping


def cache_home(env: Mapping[str, str] = os.environ) -> Path | None:
    """The cache's root, or None when it would sit under a home directory that does not exist."""
    if env.get("QWEN_DOCTOR_CACHE"):
        return Path(env["QWEN_DOCTOR_CACHE"]).expanduser()
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]).expanduser() / "qwen-doctor"
    try:
        home = Path.home()
    except (KeyError, RuntimeError):  # no HOME and no passwd entry
        return None
    return home / ".cache" / "qwen-doctor" if home.is_dir() else None


def private_folder(folder: Path) -> bool:
    """Whether `folder` is a directory (not a symlink) of ours that neither group nor others may write into."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
