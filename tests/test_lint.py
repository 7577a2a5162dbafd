"""Article lint: every idiom of the seed article is caught with the real replacement."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.cli.main import main
from doctor.lint import LintError, lint_path, lint_python, lint_shell, rules

DATA = Path(__file__).parent / "data" / "lint"

# idiom -> (rule id, a replacement the fix must name)
PYTHON_IDIOMS = {
    'LLMEngine(model="m", dtype="fp8")': ("QL001", 'quantization="fp8"'),
    'Runtime(radix_size=32768)': ("QL002", "--max-total-tokens"),
    'Runtime(mem_fraction=0.85)': ("QL003", "mem_fraction_static"),
    'Runtime(cuda_graph=True)': ("QL004", "--cuda-graph-max-bs"),
    'sglang.RayRuntime(model_path="m")': ("QL005", "--dist-init-addr"),
    'LLMEngine(enable_lm_cache=True)': ("QL006", "LMCacheConnectorV1"),
    'LLMEngine(lm_cache_size="20GB")': ("QL007", "--kv-offloading-size"),
    'Runtime(offload_to_cpu=True)': ("QL008", "--cpu-offload-gb"),
    'Runtime(cpu_offload_size="25%")': ("QL009", "cpu_offload_gb"),
    'Runtime(mixed_precision="bf16")': ("QL010", 'dtype="bfloat16"'),
    'Runtime(cache_dtype="uint8")': ("QL011", "fp8_e4m3"),
    'LLMEngine(max_requests=1000)': ("QL012", "max_num_seqs"),
    'Runtime(max_concurrent=800)': ("QL013", "max_running_requests"),
    'LLMEngine(quantization="fp8_e4m3")': ("QL014", 'quantization="fp8"'),
    'engine.save_pretrained("./out")': ("QL015", "save_sharded_state"),
    'runtime.add_adapter(adapter_path="a", modality="image")': ("QL016", "load_lora_adapter"),
}


@pytest.mark.parametrize("code", sorted(PYTHON_IDIOMS))
def test_each_python_idiom_is_caught_with_its_replacement(code: str) -> None:
    rule_id, replacement = PYTHON_IDIOMS[code]
    findings = [f for f in lint_python(code) if f.rule_id == rule_id]
    assert findings, code
    assert replacement in findings[0].fix + " ".join(findings[0].did_you_mean)


def test_valid_values_are_not_flagged() -> None:
    assert lint_python('LLM(model="m", dtype="bfloat16", quantization="fp8", max_num_seqs=256)') == []


def test_spark_fractional_gpu_with_tp8_in_one_task() -> None:
    code = ('spark = SparkSession.builder.config("spark.task.resource.gpu.amount", "0.125").getOrCreate()\n'
            'LLM(model="m", tensor_parallel_size=8)\n')
    [finding] = [f for f in lint_python(code) if f.rule_id == "QL018"]
    assert finding.line == 1 and "spark.task.resource.gpu.amount=8" in finding.did_you_mean
    assert not [f for f in lint_python(code.replace("0.125", "8")) if f.rule_id == "QL018"]


def test_the_article_file_hits_every_code_rule_and_survives_its_backslash_comments() -> None:
    found = {f.rule_id for f in lint_path(DATA / "article.py")}
    assert found == {r.id for r in rules() if not {"text", "pin", "speculative_with_pp", "tool_parser", "language_model_only"} & set(r.match)}
    text = 'x = SparkSession.builder \\\n    .config("spark.task.resource.gpu.amount", "0.125") \\  # 1/8 GPU\n    .getOrCreate()\n'
    assert lint_python(text + "LLM(tensor_parallel_size=8)\n")


def test_shell_script_idioms_and_unknown_flags() -> None:
    findings = lint_path(DATA / "serve.sh")
    ids = {(f.rule_id, f.line) for f in findings}
    assert {("QL001", 4), ("QL012", 4), ("QL002", 9), ("QL003", 9), ("QL014", 9)} <= ids
    typo = next(f for f in findings if f.rule_id == "FLAG-unknown_flag")
    assert typo.did_you_mean == ("--enable-chunked-prefill",)


def test_shell_without_launch_lines_is_clean() -> None:
    assert lint_shell("echo hello\n# vllm serve --dtype fp8\n") == []


def test_yaml_profile_flags_and_choices() -> None:
    findings = lint_path(DATA / "profile.yaml")
    ids = {f.rule_id for f in findings}
    assert {"QL003", "QL011", "QL009", "QL013", "FLAG-invalid_choice"} <= ids


def test_unparseable_inputs_raise_lint_error(tmp_path: Path) -> None:
    binary = tmp_path / "log.bin"
    binary.write_bytes(b"\x00\x01\x02")
    with pytest.raises(LintError, match="binary"):
        lint_path(binary)
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    with pytest.raises(LintError, match="not valid Python"):
        lint_path(broken)


def test_python_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = tmp_path / "evil.py"
    source.write_text(f"open({str(marker)!r}, 'w').write('x')\nLLMEngine(dtype='fp8')\n")
    assert lint_path(source) and not marker.exists()


def test_cli_exit_codes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["lint", str(DATA / "article.py")])
    assert info.value.code == 1 and "QL001" in capsys.readouterr().out
    binary = tmp_path / "x.sh"
    binary.write_bytes(b"\x00")
    with pytest.raises(SystemExit) as info:
        main(["lint", str(binary)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_engine_keyword_arguments_are_checked_against_the_flag_schema() -> None:
    code = ('LLM(model="m", tensor_parallel_size=2, max_num_seq=256, gpu_memory_utilization="high", enforce_eager=True)\n'
            'sglang.Engine(model_path="m", tp_size=2, kv_cache_dtype="fp8")\n')
    found = {(f.rule_id, f.found.split("=")[0]): f for f in lint_python(code, "0.32.0")}
    assert set(found) == {("FLAG-unknown_kwarg", "max_num_seq"), ("FLAG-bad_type", "gpu_memory_utilization"),
                          ("FLAG-invalid_choice", "kv_cache_dtype")}
    assert found[("FLAG-unknown_kwarg", "max_num_seq")].did_you_mean == ("max_num_seqs",)
    assert "fp8_e4m3" in found[("FLAG-invalid_choice", "kv_cache_dtype")].wrong


def test_article_engine_calls_raise_no_schema_noise() -> None:
    assert not [f for f in lint_path(DATA / "article.py") if f.rule_id.startswith("FLAG")]
