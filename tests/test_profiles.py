"""Profiles: shipped ones load and render; malformed ones fail with file and field named."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.profile import backend_version, requirements
from doctor.context import CheckContext
from doctor.errors import DoctorError
from doctor.results import Status
from profiles import ProfileError, list_profiles, load_profile, profile_names
from doctor.facts.model import Facts
from tests.conftest import fixture_data, load_fixture

REQUIRED = {"vllm-stable", "vllm-fp8", "vllm-throughput", "vllm-a100-8x", "sglang-stable", "sglang-interactive",
            "sglang-fp8", "cpu-tiny"}
VALID = """\
name: mine
description: test profile
backend: vllm
backend_version: ">=0.17.0"
model: Qwen/Qwen3.5-35B-A3B
sources: ["a source"]
hardware: {gpu_count: 2, min_gpu_memory_gib: 79, min_compute_capability: "8.0"}
flags: {tensor-parallel-size: 2}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return path


def test_every_required_profile_ships_and_cites_a_source() -> None:
    assert REQUIRED <= set(profile_names())
    for profile in list_profiles():
        assert profile.sources and profile.description


def test_vllm_stable_renders_the_recipe_command() -> None:
    cmd = load_profile("vllm-stable").render()
    assert cmd.argv[:3] == ["vllm", "serve", "Qwen/Qwen3.5-35B-A3B"]
    assert cmd.backend_args[cmd.backend_args.index("--tensor-parallel-size") + 1] == "2"
    assert "--reasoning-parser" in cmd.argv


def test_a100_profile_uses_bf16_not_fp8() -> None:
    cmd = load_profile("vllm-a100-8x").render()
    assert cmd.argv[cmd.argv.index("--dtype") + 1] == "bfloat16"
    assert not any("fp8" in token for token in cmd.argv)


def test_cpu_tiny_needs_a_model_dir_and_renders_the_api_server() -> None:
    profile = load_profile("cpu-tiny")
    with pytest.raises(ProfileError, match="model_dir"):
        profile.render()
    cmd = profile.render({"model_dir": "/models/tiny", "port": 8123})
    assert cmd.argv[:3] == ["python", "-m", "vllm.entrypoints.openai.api_server"]
    assert cmd.argv[3:5] == ["--model", "/models/tiny"]
    assert cmd.argv[cmd.argv.index("--port") + 1] == "8123"
    assert "--enforce-eager" in cmd.argv and cmd.argv[cmd.argv.index("--max-model-len") + 1] == "256"
    assert '"backend":"xgrammar"' in cmd.argv[cmd.argv.index("--structured-outputs-config") + 1]
    assert cmd.env["VLLM_CPU_KVCACHE_SPACE"] == "1"


def test_overrides_replace_model_host_and_port() -> None:
    cmd = load_profile("sglang-stable").render({"model": "/m", "host": "0.0.0.0", "port": 31000})
    args = cmd.backend_args
    assert args[:6] == ["--model-path", "/m", "--host", "0.0.0.0", "--port", "31000"]


def test_unknown_override_is_refused() -> None:
    with pytest.raises(ProfileError, match="unknown override 'tp'"):
        load_profile("vllm-stable").render({"tp": 4})


def test_show_text_puts_one_flag_per_line() -> None:
    text = load_profile("vllm-throughput").render().shell()
    assert "  --max-num-seqs 512 \\" in text.splitlines()


def test_boolean_false_renders_the_no_form(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, VALID.replace("{tensor-parallel-size: 2}", "{enable-prefix-caching: false}")))
    assert "--no-enable-prefix-caching" in profile.render().argv


@pytest.mark.parametrize("text, field", [
    (VALID.replace("backend: vllm", "backend: trt"), "backend"),
    (VALID.replace('">=0.17.0"', '"newest"'), "backend_version"),
    (VALID.replace("gpu_count: 2", "gpu_count: two"), "hardware.gpu_count"),
    (VALID.replace('"8.0"', '"eight"'), "hardware.min_compute_capability"),
    (VALID.replace('sources: ["a source"]\n', ""), "sources"),
    (VALID.replace("tensor-parallel-size", "--tensor-parallel-size"), "flags.--tensor-parallel-size"),
    (VALID + "colour: blue\n", "colour"),
])
def test_malformed_profile_names_file_and_field(tmp_path: Path, text: str, field: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert str(path) in str(info.value) and f"field '{field}'" in str(info.value)
    assert isinstance(info.value, DoctorError)


def test_broken_yaml_gives_the_line(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match=r"malformed YAML \(line 2\)"):
        load_profile(write(tmp_path, "name: [x\n"))


def test_unknown_profile_suggests_the_nearest() -> None:
    with pytest.raises(ProfileError, match="did you mean 'vllm-stable'"):
        load_profile("vllm-stabel")


def test_requirements_fail_fp8_on_a100_and_pass_bf16() -> None:
    facts = load_fixture("a100-8x-nvlink")
    fp8 = requirements(CheckContext(facts=facts, profile=load_profile("vllm-fp8")))
    assert any(o.status is Status.FAIL and "compute capability 8.0" in o.summary for o in fp8)
    a100 = requirements(CheckContext(facts=facts, profile=load_profile("vllm-a100-8x")))
    assert all(o.status is Status.OK for o in a100)


def test_requirements_fail_when_too_few_gpus() -> None:
    facts = load_fixture("h200")
    outcomes = requirements(CheckContext(facts=facts, profile=load_profile("vllm-a100-8x")))
    assert any(o.status is Status.FAIL and "needs 8 GPUs" in o.summary for o in outcomes)


def test_cpu_profile_needs_no_gpu_and_no_profile_skips() -> None:
    facts = load_fixture("no-driver")
    assert requirements(CheckContext(facts=facts, profile=load_profile("cpu-tiny")))[0].status is Status.OK
    assert requirements(CheckContext(facts=facts))[0].status is Status.SKIP


def test_backend_version_must_fit_the_profile_range() -> None:
    data = fixture_data("h200")
    data["packages"]["sglang"] = {"version": "0.5.12", "distribution": "sglang"}
    facts = Facts(data)
    assert backend_version(CheckContext(facts=facts, profile=load_profile("sglang-interactive"))).status is Status.FAIL
    assert backend_version(CheckContext(facts=facts, profile=load_profile("sglang-stable"))).status is Status.OK
    data["packages"]["sglang"] = None
    assert backend_version(CheckContext(facts=Facts(data), profile=load_profile("sglang-stable"))).status is Status.SKIP


def test_python_override_only_for_python_launchers() -> None:
    cmd = load_profile("cpu-tiny").render({"model_dir": "/m", "python": "/venv/bin/python"})
    assert cmd.argv[:3] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    with pytest.raises(ProfileError, match="does not run through python"):
        load_profile("vllm-stable").render({"python": "/venv/bin/python"})


def test_profile_exposes_what_checks_read_through_the_context() -> None:
    ctx = CheckContext(facts=load_fixture("h200"), backend="sglang", profile=load_profile("sglang-stable"))
    assert ctx.option("tp") == 2 and ctx.option("tensor_parallel_size") == 2
    assert ctx.option("mem_fraction_static") == 0.8 and ctx.option("model") == "Qwen/Qwen3.5-35B-A3B"
    a100 = load_profile("vllm-a100-8x")
    assert (a100.tp, a100.dp, a100.max_model_len, a100.quantization) == (2, 4, 262144, None)
    assert CheckContext(facts=load_fixture("h200"), options={"tp": 4}, profile=a100).option("tp") == 4
