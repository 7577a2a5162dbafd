"""Offline readiness of one model in the Hugging Face cache: every safetensors shard of the index present and whole.

Cache layout (huggingface_hub/file_download.py): `<cache>/models--ORG--NAME/refs/<rev>` holds the commit,
`snapshots/<commit>/<file>` links into `blobs/`, unfinished downloads are `blobs/<etag>.incomplete`.
A shard is whole when its size equals 8 + header length + the end of its last tensor (the safetensors format:
a little-endian u64 header length, a JSON header with `data_offsets`, then the data).
"""

from __future__ import annotations

import json
import os
import stat
import struct
from pathlib import Path
from typing import Any, Mapping

from doctor.facts.probes.host import hf_cache_dir
from doctor.outfile import kind_of
from doctor.safeio import MiB, InputError, read_json, read_text

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
MAX_HEADER = 100 * 1024 * 1024
MAX_SHARDS = 2000
# A sharded checkpoint's weight map: one line per tensor, a few MiB for a MoE model with hundreds of experts.
INDEX_MAX_BYTES = 64 * MiB
REF_MAX_BYTES = 4096  # refs/<branch> holds one commit hash


def repo_dir(cache: Path, model: str) -> Path:
    return cache / ("models--" + model.replace("/", "--"))


def probe(model: str, revision: str = "main", env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The `hf.cache` facts: where the snapshot is, and each shard's presence and completeness."""
    env = os.environ if env is None else env
    local = Path(model).expanduser()
    if os.path.isdir(local):
        return {"cache_dir": None, "local_path": str(local), **_snapshot(local)}
    cache = hf_cache_dir(env)
    repo = repo_dir(cache, model)
    facts: dict[str, Any] = {"cache_dir": str(cache), "repo_dir": str(repo), "cached": repo.is_dir(),
                             "commit": None, "snapshot": None}
    if not repo.is_dir():
        return facts
    commit = _commit(repo, revision)
    facts["commit"] = commit
    facts["incomplete_downloads"] = sorted(p.name for p in (repo / "blobs").glob("*.incomplete"))
    snapshot = repo / "snapshots" / commit if commit else None
    if snapshot is None or not snapshot.is_dir():
        facts["error"] = f"no snapshot for revision {revision!r} under {repo / 'snapshots'}"
        return facts
    facts["snapshot"] = str(snapshot)
    facts.update(_snapshot(snapshot))
    return facts


def _commit(repo: Path, revision: str) -> str | None:
    ref = repo / "refs" / revision
    try:
        return read_text(ref, "revision ref", REF_MAX_BYTES).strip() or None
    except InputError:
        return revision if (repo / "snapshots" / revision).is_dir() else None


def _snapshot(folder: Path) -> dict[str, Any]:
    """Shards named by the index (or the single-file checkpoint) with their state."""
    out: dict[str, Any] = {"config": (folder / "config.json").is_file(), "index": None, "shards": []}
    index_path = folder / INDEX_FILE
    if index_path.exists():
        try:
            index = read_json(index_path, "checkpoint index", INDEX_MAX_BYTES)
            names = sorted(set(index["weight_map"].values()))
        except InputError as exc:
            out["index"] = {"ok": False, "error": str(exc)}
            return out
        except (KeyError, TypeError, AttributeError) as exc:
            out["index"] = {"ok": False, "error": f"{INDEX_FILE} unreadable: {type(exc).__name__}: {exc}"}
            return out
        out["index"] = {"ok": True, "shard_count": len(names)}
    elif (folder / SINGLE_FILE).exists() or (folder / SINGLE_FILE).is_symlink():
        names = [SINGLE_FILE]
    else:
        return out
    out["shards"] = [shard_state(folder / name) for name in names[:MAX_SHARDS]]
    return out


def shard_state(path: Path) -> dict[str, Any]:
    """{'name', 'present', 'size', 'expected_size', 'complete', 'error'} for one safetensors file."""
    state: dict[str, Any] = {"name": path.name, "present": False, "size": None, "expected_size": None,
                             "complete": False, "error": None}
    try:
        st = path.stat()
    except OSError:
        state["error"] = "dangling link into blobs/" if path.is_symlink() else "missing"
        return state
    size = st.st_size
    state.update(present=True, size=size)
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read below; a device would never end
        state["error"] = f"not a readable safetensors file: it is {kind_of(st.st_mode)}, not a regular file"
        return state
    try:
        with path.open("rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise ValueError("shorter than the 8-byte header length")
            (length,) = struct.unpack("<Q", head)
            if length > MAX_HEADER or 8 + length > size:
                raise ValueError(f"header length {length} does not fit in {size} bytes")
            header = json.loads(fh.read(length).decode("utf-8"))
        ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"]
    except RecursionError:
        state["error"] = "not a readable safetensors file: its header nests deeper than JSON can be read"
        return state
    except (OSError, ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as exc:
        state["error"] = f"not a readable safetensors file: {exc}"
        return state
    expected = 8 + length + max(ends, default=0)
    state["expected_size"] = expected
    state["complete"] = size == expected
    if size < expected:
        state["error"] = f"truncated: {size} of {expected} bytes"
    elif size > expected:
        state["error"] = f"{size - expected} bytes of trailing data after the last tensor"
    return state
