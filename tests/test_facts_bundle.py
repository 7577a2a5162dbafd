"""A facts bundle round-trips, and anything else is refused with one clear line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from doctor.errors import BadBundle
from doctor.facts.model import SCHEMA_VERSION, Facts
from tests.conftest import FIXTURES


def test_recorded_h200_bundle_loads_with_its_gpu():
    facts = Facts.load(FIXTURES / "h200.json")
    assert facts.nvml_available
    assert [g["name"] for g in facts.gpus] == ["NVIDIA H200"]
    assert facts.gpus[0]["compute_capability"] == "9.0"
    assert facts.package_version("torch") == "2.11.0"
    assert facts.package("vllm") is None


def test_save_then_load_round_trips(tmp_path: Path):
    facts = Facts.load(FIXTURES / "h200.json")
    out = tmp_path / "b.json"
    facts.save(out)
    assert Facts.load(out).data == facts.data
    assert not (tmp_path / "b.json.tmp").exists()


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\x00\x01\x02\xff", "invalid JSON"),
        (b"{not json", "invalid JSON"),
        (b"[1, 2]", "top level is not an object"),
        (b'{"schema": "something-else", "schema_version": 1}', "'schema' is not"),
        (b'{"schema": "qwen-doctor.facts", "schema_version": "one"}', "schema_version"),
        (b'{"schema": "qwen-doctor.facts", "schema_version": 99}', "newer than this qwen-doctor reads"),
        (b'{"schema": "qwen-doctor.facts", "schema_version": 1, "nvml": []}', "nvml: expected an object, got a list"),
        (b'{"schema": "qwen-doctor.facts", "schema_version": 1, "nvml": {"gpus": [1]}}', "nvml.gpus[0]: expected an object, got 1"),
    ],
)
def test_corrupt_bundles_raise_one_line_errors(tmp_path: Path, content: bytes, message: str):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(BadBundle) as info:
        Facts.load(path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    assert path.read_bytes() == content


def test_missing_bundle_names_the_path(tmp_path: Path):
    with pytest.raises(BadBundle, match="cannot read bundle"):
        Facts.load(tmp_path / "absent.json")


def test_schema_version_constant_matches_recorded_fixture():
    assert json.loads((FIXTURES / "h200.json").read_text())["schema_version"] == SCHEMA_VERSION
