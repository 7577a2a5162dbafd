"""Where qwen-doctor keeps what it can rebuild (parsed templates, compiled validators, rehearsal checkpoints).

$QWEN_DOCTOR_CACHE, else $XDG_CACHE_HOME/qwen-doctor (XDG Base Directory Specification), else
~/.cache/qwen-doctor. A cache under a home directory that does not exist is no cache: the tool does not create the
home of a service account whose HOME names nothing (`HOME=/nonexistent`, Debian's convention for system users).
"""

from __future__ import annotations

import os
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
