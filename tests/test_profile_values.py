"""Profiles and `--set` overrides are typed: a wrong value is exit 2 with one line naming the field, never an
internal error or a crashed check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from profiles import ProfileError, list_profiles, load_profile
from profiles.model import parse_profile
from tests.conftest import FIXTURES
from tests.test_cli_check import ROOT, qd
from tests.test_output_safety import assert_refused

STABLE = yaml.safe_load((ROOT / "profiles" / "vllm-stable.yaml").read_text())


def with_fields(**changes: Any) -> dict[str, Any]:
    data = {**STABLE, **changes}
    return {k: v for k, v in data.items() if v is not ...}


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"k": value}
    return value


BAD = [
    ("list launcher", with_fields(launcher=["vllm-serve"]), "launcher"),
    ("300-character name", with_fields(name="x" * 300), "name"),
    ("name with a slash", with_fields(name="../../etc"), "name"),
    ("port 99999", with_fields(port=99999), "port"),
    ("port as text", with_fields(port="abc"), "port"),
    ("huge port", with_fields(port=10**30), "port"),
    ("host list", with_fields(host=["a", "b"]), "host"),
    ("host with a space", with_fields(host="a b"), "host"),
    ("model list", with_fields(model=["m"]), "model"),
    ("description number", with_fields(description=5), "description"),
    ("backend list", with_fields(backend=["vllm"]), "backend"),
    ("backend_version list", with_fields(backend_version=[">=1"]), "backend_version"),
    ("tp infinite", with_fields(flags={"tensor-parallel-size": float("inf")}), "flags.tensor-parallel-size"),
    ("tp text", with_fields(flags={"tensor-parallel-size": "two"}), "flags.tensor-parallel-size"),
    ("tp zero", with_fields(flags={"tensor-parallel-size": 0}), "flags.tensor-parallel-size"),
    ("utilization above 1", with_fields(flags={"gpu-memory-utilization": 1.5}), "flags.gpu-memory-utilization"),
    ("utilization NaN", with_fields(flags={"gpu-memory-utilization": float("nan")}), "flags.gpu-memory-utilization"),
    ("max-model-len float", with_fields(flags={"max-model-len": 1.5}), "flags.max-model-len"),
    ("flag huge int", with_fields(flags={"max-num-seqs": 10**40}), "flags.max-num-seqs"),
    ("flag deep mapping", with_fields(flags={"hf-overrides": nested(20)}), "flags.hf-overrides"),
    ("flag list of lists", with_fields(flags={"api-key": [["a"]]}), "flags.api-key"),
    ("flag empty", with_fields(flags={"api-key": None}), "flags.api-key"),
    ("flags list", with_fields(flags=["tensor-parallel-size"]), "flags"),
    ("gpu_count huge", with_fields(hardware={**STABLE["hardware"], "gpu_count": 10**20}), "hardware.gpu_count"),
    ("memory NaN", with_fields(hardware={**STABLE["hardware"], "min_gpu_memory_gib": float("nan")}),
     "hardware.min_gpu_memory_gib"),
    ("cc list", with_fields(hardware={**STABLE["hardware"], "min_compute_capability": [8, 0]}),
     "hardware.min_compute_capability"),
    ("nvlink list", with_fields(hardware={**STABLE["hardware"], "nvlink": ["no"]}), "hardware.nvlink"),
    ("env mapping", with_fields(env={"A": {"b": 1}}), "env.A"),
    ("env infinite", with_fields(env={"A": float("inf")}), "env.A"),
    ("variable list", with_fields(variables={"model_dir": [1, 2]}), "variables.model_dir"),
    ("variable bad name", with_fields(variables={"Model Dir": "x"}), "variables.Model Dir"),
    ("sources number", with_fields(sources=[1]), "sources"),
]


@pytest.mark.parametrize("data, field", [(d, f) for _, d, f in BAD], ids=[i for i, _, _ in BAD])
def test_wrong_types_are_one_profile_error_naming_the_field(data: dict[str, Any], field: str):
    with pytest.raises(ProfileError) as caught:
        parse_profile(data, "p.yaml")
    message = str(caught.value)
    assert message.startswith(f"p.yaml: field '{field}': ") and "\n" not in message and len(message) < 300


@pytest.mark.parametrize("case", ["list launcher", "300-character name", "tp infinite", "tp text", "memory NaN",
                                  "flag deep mapping", "huge port"])
def test_bad_profiles_are_exit_2_for_check_and_deploy(tmp_path: Path, case: str):
    data, field = next((d, f) for i, d, f in BAD if i == case)
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data))
    before = path.read_bytes()
    assert_refused(qd("check", "--from", str(FIXTURES / "h200.json"), "--profile", str(path)), f"'{field}'")
    assert_refused(qd("deploy", "--profile", str(path), "--dry-run"), f"'{field}'")
    assert path.read_bytes() == before


@pytest.mark.parametrize("override, why", [
    ("port=abc", "override port: must be a port number from 1 to 65535; got 'abc'"),
    ("port=99999", "override port: must be a port number from 1 to 65535; got 99999"),
    ("port=0", "override port: must be a port number from 1 to 65535; got 0"),
    ("host=", "override host: must be a host name or IP address"),
    ("model=", "override model: must be a non-empty string"),
    ("nope=1", "unknown override 'nope'"),
])
def test_bad_set_overrides_are_exit_2_with_one_line(override: str, why: str):
    assert_refused(qd("deploy", "--profile", "vllm-stable", "--dry-run", "--set", override), why)
    assert_refused(qd("profiles", "show", "vllm-stable", "--render", "--set", override), why)


def test_good_overrides_render_and_shipped_profiles_still_load():
    profile = load_profile("vllm-stable")
    argv = profile.render({"port": "8001", "host": "0.0.0.0", "model": "/models/q"}).argv
    assert argv[argv.index("--port") + 1] == "8001" and "/models/q" in argv
    assert {p.name for p in list_profiles()} >= {"vllm-stable", "sglang-stable", "cpu-tiny"}


@pytest.mark.parametrize("flag_text, why", [
    ("  hf-overrides: " + "[" * 100 + "]" * 100, "nested deeper than 64 levels"),
    ("  max-num-seqs: " + "9" * 5000, "an integer with more than 100 digits"),
    ("  max-num-seqs: .inf", "flags.max-num-seqs': must be a finite number"),
])
def test_deep_nesting_and_huge_numbers_in_a_profile_are_exit_2(tmp_path: Path, flag_text: str, why: str):
    path = tmp_path / "p.yaml"
    path.write_text((ROOT / "profiles" / "vllm-stable.yaml").read_text() + flag_text + "\n")
    assert_refused(qd("check", "--from", str(FIXTURES / "h200.json"), "--profile", str(path)), why)


@pytest.mark.parametrize("name", ["x" * 300, "x" * 300 + ".yaml", "../" * 100 + "p.yaml", "bad name\x01"])
def test_an_absurd_profile_name_on_the_command_line_is_exit_2(name: str):
    assert_refused(qd("check", "--from", str(FIXTURES / "h200.json"), "--profile", name), "profile")
    assert_refused(qd("deploy", "--dry-run", "--profile", name), "profile")


@pytest.mark.parametrize("length", ["auto", "AUTO", " auto ", -1, "-1"])
def test_max_model_len_auto_is_accepted_where_the_pinned_vllm_reads_it(length: Any):
    profile = parse_profile(with_fields(flags={**STABLE["flags"], "max-model-len": length}), "t.yaml")
    assert profile.max_model_len == -1  # doctor.flags.values.AUTO_LENGTH: vLLM fits the length to the KV cache
    assert profile.flags["max-model-len"] == length  # rendered as the user wrote it


@pytest.mark.parametrize("pin", ["<0.35", ">=0.15.0", ">=0.16.0,<0.17", "==0.16.*"])
def test_max_model_len_auto_is_refused_where_a_pinned_release_cannot_read_it(pin: str):
    data = with_fields(backend_version=pin, flags={**STABLE["flags"], "max-model-len": "auto"})
    with pytest.raises(ProfileError, match=r"flags.max-model-len.*from 0\.17\.0: pin backend_version to >=0\.17\.0"):
        parse_profile(data, "t.yaml")


def test_max_model_len_auto_renders_and_plans_through_the_cli(tmp_path: Path):
    path = tmp_path / "auto.yaml"
    path.write_text(yaml.safe_dump(with_fields(flags={**STABLE["flags"], "max-model-len": "auto"})))
    shown = qd("profiles", "show", str(path), "--render")
    assert shown.returncode == 0 and "--max-model-len auto" in shown.stdout.replace("\\\n", "").replace("  ", " ")
    planned = qd("plan", "--gpus", "1xH200", "--profile", str(path))
    assert planned.returncode in (0, 1) and "Traceback" not in planned.stderr, planned.stderr
