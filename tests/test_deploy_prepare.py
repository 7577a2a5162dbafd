"""From profile to launch spec: rendering, the backend's interpreter, flag checks, and the KV comparison."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from doctor.deploy import kv, prepare
from doctor.deploy.spec import from_argv
from doctor.errors import DoctorError
from doctor.facts.model import Facts
from doctor.models import get_model
from doctor.planner import Hardware, plan
from doctor.planner.hardware import GIB
from doctor.planner.startup import facts_hardware
from tests.conftest import load_fixture

TINY_CONFIG = Path(__file__).parent / "data" / "deploy"


def test_cpu_tiny_renders_with_the_model_dir_and_the_backend_python() -> None:
    spec = prepare.render(prepare.load("cpu-tiny"), port=8123, model="/models/tiny")
    spec = prepare.with_interpreter(spec, "/venv/bin/python")
    assert spec.argv[:3] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    assert spec.port == 8123 and spec.base_url == "http://127.0.0.1:8123"
    assert spec.served_model_name == "tiny" and spec.deployment.settings.max_model_len == 256 and spec.reasoning_parser is None
    assert spec.env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert prepare.model_of(spec) == "/models/tiny"
    assert prepare.backend_args(spec)[:2] == ["--model", "/models/tiny"]


def test_vllm_serve_uses_the_vllm_script_next_to_the_interpreter(tmp_path) -> None:
    (tmp_path / "vllm").write_text("#!/bin/sh\n")
    spec = prepare.render(prepare.load("vllm-stable"))
    moved = prepare.with_interpreter(spec, str(tmp_path / "python"))
    assert moved.argv[0] == str(tmp_path / "vllm") and moved.argv[1:3] == ["serve", "Qwen/Qwen3.5-35B-A3B"]
    assert prepare.model_of(moved) == "Qwen/Qwen3.5-35B-A3B"
    assert prepare.with_interpreter(spec, str(tmp_path / "elsewhere" / "python")).argv[0] == "vllm"


def test_reasoning_parser_and_served_name_are_read_from_the_command() -> None:
    spec = from_argv(["python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3.5-35B-A3B",
                      "--reasoning-parser=qwen3", "--port", "30001"], {}, "sglang")
    assert spec.reasoning_parser == "qwen3" and spec.served_model_name == "Qwen/Qwen3.5-35B-A3B"
    assert spec.port == 30001 and spec.deployment.settings.tp is None


@pytest.mark.parametrize("name", ["vllm-stable", "vllm-fp8", "vllm-throughput", "vllm-a100-8x", "sglang-stable",
                                  "sglang-fp8", "sglang-interactive"])
def test_every_shipped_gpu_profile_renders_flags_its_schema_accepts(name: str) -> None:
    result = prepare.flag_check(prepare.render(prepare.load(name)), None)
    assert result.status.value == "ok", (result.summary, result.details)


def test_a_flag_the_backend_does_not_know_fails_the_flag_check() -> None:
    spec = from_argv(["vllm", "serve", "m", "--dtype", "fp8", "--radix-size", "3"], {}, "vllm")
    result = prepare.flag_check(spec, "0.32.0")
    assert result.status.value == "fail" and len(result.details) == 2


def test_unknown_profile_and_bad_override_are_doctor_errors() -> None:
    with pytest.raises(DoctorError, match="unknown profile"):
        prepare.load("vllm-stabel")
    with pytest.raises(DoctorError, match="unknown override 'colour'"):
        prepare.render(prepare.load("vllm-stable"), variables={"colour": "red"})


def test_check_options_carry_the_command_lines_serving_flags() -> None:
    opts = kv.check_options(prepare.render(prepare.load("sglang-stable")))
    assert opts["tp"] == 2 and opts["mem_fraction_static"] == 0.8 and "gpu_memory_utilization" not in opts


def test_kv_prediction_on_gpus_comes_from_the_plan_for_the_recorded_h200() -> None:
    spec = prepare.render(prepare.load("vllm-fp8"))
    prediction = kv.predict(spec, prepare.model_of(spec), load_fixture("h200"))
    assert prediction.tokens and prediction.tokens > 1_000_000 and "1x H200" in prediction.basis
    assert kv.predict(spec, prepare.model_of(spec), None).tokens is None


def _with_other_tenant(facts: Facts, held_gib: float) -> Facts:
    """`facts` with every GPU's NVML free memory `held_gib` lower, held by a process that is not an engine."""
    data = copy.deepcopy(facts.data)
    for gpu in data["nvml"]["gpus"]:
        gpu["memory"]["free"] = gpu["memory"]["total"] - int(held_gib * GIB)
        gpu["processes"] = [{"pid": 4242, "name": "blender", "used_memory": int(held_gib * GIB)}]
    return Facts(data)


def test_kv_prediction_takes_the_memory_other_processes_hold_at_start_up_from_the_facts() -> None:
    spec = prepare.render(prepare.load("sglang-fp8"))
    model, h200 = prepare.model_of(spec), load_fixture("h200")
    idle, busy = kv.predict(spec, model, h200), kv.predict(spec, model, _with_other_tenant(h200, 20))
    # SGLang sizes its pools from the memory free before the load: the tenant's 20 GiB come off them,
    # exactly as `plan --facts` plans the same bundle
    hardware = facts_hardware(_with_other_tenant(h200, 20))
    planned = plan(get_model(model), Hardware(hardware.gpu, 1, hardware.other_process_bytes), kv.serve_config(spec))
    assert busy.tokens == planned.kv_tokens and busy.tokens < idle.tokens
    held = f"{hardware.other_process_bytes / GIB:.2f} GiB held by other processes at start-up"
    assert held in busy.basis and "held" not in idle.basis


def test_kv_prediction_on_cpu_is_the_vllm_cpu_formula(tmp_path) -> None:
    (tmp_path / "config.json").write_text((TINY_CONFIG / "tiny-qwen3-moe-config.json").read_text())
    spec = prepare.render(prepare.load("cpu-tiny"), model=str(tmp_path))
    # 2 layers x K,V x 2 KV heads x 32 head_dim x 2 bytes = 512 B/token; 1 GiB / 512 B = 2,097,152 tokens
    assert kv.predict(spec, str(tmp_path), None).tokens == 2_097_152


@pytest.mark.parametrize("logged, predicted, status", [
    (2_097_152, 2_097_152, "ok"), (1_000_000, 1_040_000, "ok"), (800_000, 1_000_000, "warn"),
    (None, 1_000, "skip"), (1_000, None, "skip")])
def test_kv_comparison_tolerates_five_percent(logged, predicted, status) -> None:
    assert kv.compare(logged, kv.KVPrediction(predicted, "test"))[0] == status
