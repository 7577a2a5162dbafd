"""The rehearsal folder of a separate speculative drafter (DFlash, EAGLE): its config.json from the registry's
`drafters:` (doctor/models/registry.yaml, each with its source), so an engine can load it with `--load-format dummy`.
The drafter shares the target's tokenizer, so nothing else is written."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from doctor.errors import DoctorError
from doctor.rehearse import cachefolder
from doctor.rehearse.checkpoint import cache_root

# transformers' AutoConfig needs a model_type; the DFlash drafters are Qwen3 decoder layers
# (vllm/model_executor/models/qwen3_dflash.py builds them from a Qwen3 config)
DRAFTER_MODEL_TYPE = "qwen3"


def registry_config(name: str) -> tuple[str, dict[str, Any]]:
    """(registry name, config.json content) of the drafter `name` (a registry name or alias, any case)."""
    from doctor.models.registry import drafter_entries

    entries = drafter_entries()
    wanted = name.lower()
    for key, entry in entries.items():
        if wanted in [str(k).lower() for k in [key, *(entry.get("aliases") or [])]]:
            return str(key), dict(entry["config"])
    raise DoctorError(f"no drafter named {name!r} in the registry (known: {', '.join(sorted(entries))})")


def build(name: str, root: Path | None = None) -> Path:
    """The folder holding the drafter's config.json, written once per content hash into a folder of ours alone
    (a cache folder another user may write into is never reused or written through: doctor/rehearse/cachefolder)."""
    key, config = registry_config(name)
    config.setdefault("model_type", DRAFTER_MODEL_TYPE)
    body = json.dumps(config, indent=2, sort_keys=True).encode()
    digest = hashlib.sha256(body).hexdigest()[:16]
    path = (root or cache_root()) / f"{key.rsplit('/', 1)[-1]}-{digest}"
    reused = cachefolder.reuse(path, lambda folder: _holds(folder, body))
    if reused is not None:
        return reused[0]
    folder = cachefolder.fresh(path)
    cachefolder.write_whole(folder, {"config.json": body}, "config.json")
    return folder


def _holds(folder: Path, body: bytes) -> bool | None:
    """True when `folder` holds exactly the config.json we would write (a regular file, not a link)."""
    target = folder / "config.json"
    try:
        return True if not target.is_symlink() and target.is_file() and target.read_bytes() == body else None
    except OSError:
        return None
