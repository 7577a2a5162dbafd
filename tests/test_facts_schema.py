"""The facts schema (doctor/facts/facts.schema.json): what collectors write validates, anything else is one
line naming the field, and the oddities Python's JSON parser lets through are refused the same way."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from doctor.errors import BadBundle
from doctor.facts import schema
from doctor.facts.collect import collect
from doctor.facts.model import Facts
from tests.conftest import FIXTURES, fixture_data
from tests.test_fleet_checks import fleet_facts, node

ALL_FIXTURES = sorted(p.stem for p in FIXTURES.glob("*.json"))


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_every_recorded_and_derived_fixture_validates(name: str):
    Facts.load(FIXTURES / f"{name}.json")


def test_this_machines_collection_validates_including_failed_probes():
    def broken() -> dict[str, Any]:
        raise OSError("no such device")

    def slow() -> dict[str, Any]:
        time.sleep(2)
        return {}

    Facts.from_dict(collect().data)
    failed = collect({"nvml": broken, "host": slow}, timeout_s=0.2).data
    assert failed["probes"]["nvml"]["status"] == "error" and failed["probes"]["host"]["status"] == "timeout"
    Facts.from_dict(failed)


def test_network_and_hf_sections_as_their_probes_write_them_validate(tmp_path: Path):
    from doctor.net import hf, ray_gcs

    data = fixture_data("h200")
    data["network"] = {"ray_gcs": ray_gcs.probe("127.0.0.1:1", "--ray", timeout_s=0.5)}
    data["hf"] = hf.probe("Qwen/Qwen3.5-35B-A3B", env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path)})
    assert data["network"]["ray_gcs"]["tcp"]["ok"] is False
    Facts.from_dict(data)


def test_the_shipped_schema_is_valid_json_schema_and_a_reference_validator_agrees():
    from jsonschema import Draft7Validator

    Draft7Validator.check_schema(schema.schema())
    reference = Draft7Validator(schema.schema())
    for name in ALL_FIXTURES:
        assert not list(reference.iter_errors(fixture_data(name))), name
    bad = fixture_data("h200")
    bad["nvml"]["gpus"][0]["memory"]["total"] = "abc"
    assert list(reference.iter_errors(bad))


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split("/")]
        target = data
        for part in parents:
            target = target[part]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value
    return mutate


@pytest.mark.parametrize("mutate,message", [
    (_set("nvml/gpus/3/memory/total", "abc"), 'nvml.gpus[3].memory.total: expected integer, got "abc"'),
    (_set("nvml/gpus/3/memory/total", 0), "nvml.gpus[3].memory.total: must be >= 1, got 0"),
    (_set("nvml/gpus/3/memory/total", True), "nvml.gpus[3].memory.total: expected integer, got true"),
    (_set("nvml/gpus/1/memory/free", KeyError), "nvml.gpus[1].memory.free: missing (required)"),
    (_set("nvml/gpus/0/index", KeyError), "nvml.gpus[0].index: missing (required)"),
    (_set("nvml/gpus/2/nvlink/4/link", None), "nvml.gpus[2].nvlink[4].link: expected integer, got null"),
    (_set("nvml/topology/5/p2p", None), "nvml.topology[5].p2p: expected an object, got null"),
    (_set("nvml/available", "yes"), 'nvml.available: expected boolean, got "yes"'),
    (_set("host/shm/total", -5), "host.shm.total: must be >= 0, got -5"),
    (_set("host/nofile", [1, 2]), "host.nofile: expected an object or null, got a list"),
    (_set("packages/torch/version", 2.1), "packages.torch.version: expected string or null, got 2.1"),
    (_set("env/HF_HOME", 7), "env.HF_HOME: expected string, got 7"),
    (_set("probes/nvml/status", "sleepy"), 'probes.nvml.status: expected "ok" or "error" or "timeout", got "sleepy"'),
    (_set("nvml/gpus", {"0": {}}), "nvml.gpus: expected a list, got an object"),
    (_set("host", "vm"), 'host: expected an object, got "vm"'),
])
def test_a_bad_field_is_one_line_naming_its_path(tmp_path: Path, mutate: Callable[[dict[str, Any]], None],
                                                  message: str):
    data = fixture_data("a100-8x-nvlink")
    mutate(data)
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(data))
    with pytest.raises(BadBundle) as info:
        Facts.load(path)
    assert str(info.value) == f"{path}: {message}"


@pytest.mark.parametrize("raw,message", [
    ('{"a": NaN}', "NaN is not a JSON number"),
    ('{"a": [1, {"b": -Infinity}]}', "-Infinity is not a JSON number"),
    ('{"a": 1e400}', "number 1e400 is out of range"),
    ('{"a": [1, {"b": ' + str(10**30) + "}]}", "extra.a[1].b: number out of range (10000"),
    ('{"a": ' + str(10**400) + "}", "an integer with more than 100 digits"),
    ('{"a": ' + "[" * 100 + "]" * 100 + "}", "nested deeper than 64 levels"),
    ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
])
def test_numbers_and_nesting_no_collector_writes_are_refused(tmp_path: Path, raw: str, message: str):
    path = tmp_path / "b.json"
    data = fixture_data("h200")
    text = json.dumps(data)[:-1] + ', "extra": ' + raw + "}" if raw.startswith("{") else raw
    path.write_text(text)
    with pytest.raises(BadBundle) as info:
        Facts.load(path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_value_in_range_stays_accepted():
    data = fixture_data("h200")
    data["extra"] = {"big": 2**64 - 1, "float": 1e308, "deep": json.loads("[" * 60 + "]" * 60)}
    Facts.from_dict(json.loads(json.dumps(data)))


def test_the_bad_value_is_redacted_in_the_message():
    data = fixture_data("h200")
    data["nvml"]["gpus"][0]["name"] = {"x": 1}
    data["nvml"]["gpus"][0]["index"] = "hf_abcdefghijklmnopqrstuvwxyz0123"
    with pytest.raises(BadBundle) as info:
        Facts.from_dict(data)
    assert "nvml.gpus[0].index" in str(info.value) and "hf_abcdefghij" not in str(info.value)


def test_a_fleet_node_with_bad_facts_is_that_nodes_error_and_the_rest_is_checked():
    bad = node("dgx2")
    bad["facts"]["nvml"]["gpus"][0]["memory"] = "80GB"
    facts = fleet_facts([node("dgx1"), bad])
    good, broken = facts.data["fleet"]["nodes"]
    assert good["status"] == "ok" and good["facts"]
    assert broken["status"] == "error" and broken["facts"] is None
    assert "nvml.gpus[0].memory: expected an object or null" in broken["error"]
    assert bad["facts"] is not None  # the caller's document is not changed


def test_the_fleet_section_itself_must_be_readable():
    facts = fleet_facts([node("dgx1")])
    data = copy.deepcopy(facts.data)
    data["fleet"]["nodes"][0]["resources"] = {"GPU": "eight"}
    with pytest.raises(BadBundle, match=r'fleet.nodes\[0\].resources.GPU: expected number, got "eight"'):
        Facts.from_dict(data)
