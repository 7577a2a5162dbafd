"""Offline readiness: a Hugging Face cache built in the test, with whole, truncated and missing shards."""

from __future__ import annotations

import copy
import json
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

from doctor.facts.model import Facts
from doctor.net import hf, hf_cache
from tests.conftest import fixture_data, run

ROOT = Path(__file__).resolve().parents[1]
MODEL = "acme/tiny"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def safetensors_bytes(n_floats: int) -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [n_floats], "data_offsets": [0, 4 * n_floats]},
                         "__metadata__": {"format": "pt"}}).encode()
    return struct.pack("<Q", len(header)) + header + b"\0" * (4 * n_floats)


def build_cache(home: Path, shards: int = 3, truncate: str | None = None, drop: str | None = None,
                incomplete: bool = False) -> Path:
    """An HF cache laid out like huggingface_hub's: refs/main, snapshots/<commit>/* linking into blobs/."""
    repo = home / "hub" / ("models--" + MODEL.replace("/", "--"))
    blobs, snap = repo / "blobs", repo / "snapshots" / COMMIT
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    names = [f"model-{i + 1:05d}-of-{shards:05d}.safetensors" for i in range(shards)]
    files = {name: safetensors_bytes(64 * (i + 1)) for i, name in enumerate(names)}
    files["model.safetensors.index.json"] = json.dumps(
        {"metadata": {"total_size": 1}, "weight_map": {f"layer{i}.w": n for i, n in enumerate(names)}}).encode()
    files["config.json"] = b"{}"
    for i, (name, content) in enumerate(files.items()):
        if name == drop:
            continue
        if name == truncate:
            content = content[: len(content) - 100]
        blob = blobs / f"blob{i}"
        blob.write_bytes(content)
        (snap / name).symlink_to(os.path.relpath(blob, snap))
    if incomplete:
        (blobs / "deadbeef.incomplete").write_bytes(b"partial")
    return home


def verdict(home: Path, offline: bool) -> Any:
    env = {"HF_HOME": str(home), **({"HF_HUB_OFFLINE": "1"} if offline else {})}
    section = hf.probe(MODEL, env=env)
    data = copy.deepcopy(fixture_data("h200"))
    data["hf"] = section
    [result] = run(Facts(data), only=("QD-HF-003",))["QD-HF-003"]
    return result


def test_a_complete_cache_passes_offline(tmp_path: Path):
    r = verdict(build_cache(tmp_path), offline=True)
    assert r.status.value == "ok" and "all 3 shard(s) present and complete" in r.summary


def test_a_truncated_shard_fails_offline_and_warns_online(tmp_path: Path):
    home = build_cache(tmp_path, truncate="model-00002-of-00003.safetensors")
    offline = verdict(home, offline=True)
    assert offline.status.value == "fail" and "1 of 3 shard(s)" in offline.summary
    assert any("model-00002-of-00003.safetensors: truncated" in d for d in offline.details)
    assert verdict(home, offline=False).status.value == "warn"


def test_a_shard_named_by_the_index_but_absent_fails(tmp_path: Path):
    r = verdict(build_cache(tmp_path, drop="model-00003-of-00003.safetensors"), offline=True)
    assert r.status.value == "fail" and any("00003" in d and "missing" in d for d in r.details)


def test_a_dangling_link_into_blobs_is_reported(tmp_path: Path):
    home = build_cache(tmp_path)
    blob = next((home / "hub").glob("models--*/snapshots/*/model-00001-of-00003.safetensors")).resolve()
    blob.unlink()
    r = verdict(home, offline=True)
    assert r.status.value == "fail" and any("dangling link" in d for d in r.details)


def test_unfinished_downloads_warn_even_when_shards_are_whole(tmp_path: Path):
    r = verdict(build_cache(tmp_path, incomplete=True), offline=True)
    assert r.status.value == "warn" and "unfinished download" in r.summary


def test_offline_with_an_empty_cache_fails_with_huggingface_hubs_message(tmp_path: Path):
    r = verdict(tmp_path, offline=True)
    assert r.status.value == "fail" and "not in the cache" in r.summary
    assert "outgoing traffic has been disabled" in r.details[0]
    assert verdict(tmp_path, offline=False).status.value == "ok"


def test_garbage_in_place_of_a_shard_is_not_a_safetensors_file(tmp_path: Path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\xff" * 64)
    state = hf_cache.shard_state(path)
    assert not state["complete"] and "not a readable safetensors file" in state["error"]


def test_a_local_model_directory_is_checked_in_place(tmp_path: Path):
    (tmp_path / "model.safetensors").write_bytes(safetensors_bytes(16))
    section = hf.probe(str(tmp_path), env={})
    assert section["endpoints"] == [] and section["cache"]["shards"][0]["complete"]


def test_check_hf_offline_end_to_end_reads_the_cache_without_network(tmp_path: Path):
    home = build_cache(tmp_path, truncate="model-00001-of-00003.safetensors")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "doctor", "check", "--hf", "--model", MODEL, "--only", "QD-HF",
                           "--format", "json"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    results = {r["check_id"]: r for r in json.loads(done.stdout)["results"]}
    assert results["QD-HF-001"]["status"] == "skip"
    assert results["QD-HF-003"]["status"] == "fail"
    assert done.returncode == 1


def test_a_shard_whose_header_nests_past_what_json_can_read_is_named_unreadable(tmp_path: Path):
    header = b"[" * 200_000 + b"]" * 200_000
    shard = tmp_path / "model-00001-of-00001.safetensors"
    shard.write_bytes(struct.pack("<Q", len(header)) + header)
    state = hf_cache.shard_state(shard)
    assert state["present"] and "not a readable safetensors file" in state["error"]
