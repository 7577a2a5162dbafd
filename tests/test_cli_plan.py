"""`qwen-doctor plan` through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from doctor.cli.main import cli


def run(*args: str):
    return CliRunner().invoke(cli, ["plan", *args])


def test_fitting_plan_exits_0_and_prints_a_table_per_stage():
    result = run("--gpus", "2xH100", "--tp", "2", "--pp", "1", "--max-model-len", "131072")
    assert result.exit_code == 0, result.output
    assert "stage 0 (x2 GPUs)" in result.output
    assert "KV capacity" in result.output and "block size" in result.output
    assert "✓ fits" in result.output


def test_non_fitting_plan_exits_1_with_the_smallest_change():
    result = run("--gpus", "8xA100-80G", "--tp", "8", "--model", "Qwen/Qwen3.5-35B-A3B-FP8")
    assert result.exit_code == 1
    assert "✗ The output_size of gate's and up's weight = 64 is not divisible by weight quantization block_n = 128." \
        in result.output
    assert "smallest change that makes it fit: use --tensor-parallel-size 4 with --data-parallel-size 2" in result.output


def test_pipeline_parallel_prints_one_column_per_stage():
    result = run("--gpus", "4xL40S", "--tp", "2", "--pp", "2", "--model", "fp8", "--max-model-len", "32768")
    assert "stage 0 (x2 GPUs)" in result.output and "stage 1 (x2 GPUs)" in result.output
    assert "0-19 (5 attn, 15 GDN)" in result.output and "20-39 (5 attn, 15 GDN)" in result.output


def test_json_output_is_machine_readable():
    result = run("--gpus", "1xH200", "--model", "fp8", "--backend", "sglang", "--format", "json")
    data = json.loads(result.output)
    assert data["fits"] is True and data["model"] == "Qwen/Qwen3.5-35B-A3B-FP8"
    assert data["ranks"][0]["mamba_slots"] > 0 and data["kv_tokens"] == data["ranks"][0]["kv_tokens"]
    assert data["kv_bytes_per_token"] == 20 * 1024


def test_reads_a_local_checkpoint_directory(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({
        "architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "num_experts": 4,
        "num_experts_per_tok": 2, "moe_intermediate_size": 32, "vocab_size": 385,
        "max_position_embeddings": 256, "tie_word_embeddings": True}))
    result = run("--gpus", "1xL40S", "--model", str(tmp_path), "--format", "json")
    assert result.exit_code == 0
    assert json.loads(result.output)["kv_bytes_per_token"] == 2 * 2 * 2 * 32 * 2


@pytest.mark.parametrize("args, fragment", [
    (["--gpus", "3xNOPE"], "unknown GPU 'NOPE'"),
    (["--gpus", "1xH100", "--model", "Qwen/Qwen7"], "unknown model 'Qwen/Qwen7'"),
])
def test_bad_input_is_one_line_on_stderr_and_exit_2(args, fragment, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "doctor", "plan", *args], capture_output=True, text=True)
    assert proc.returncode == 2
    assert fragment in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_corrupt_config_json_is_exit_2(tmp_path):
    (tmp_path / "config.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00garbage")
    proc = subprocess.run([sys.executable, "-m", "doctor", "plan", "--gpus", "1xH100", "--model", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "not valid JSON" in proc.stderr and "Traceback" not in proc.stderr


def test_planning_itself_takes_well_under_300_ms():
    # the work behind `plan` (a failing plan computes every suggestion); start-up is measured in bench/
    from doctor.models import get_model
    from doctor.planner import ServeConfig, parse_gpus, plan
    from doctor.planner.render import render_text

    start = time.perf_counter()
    render_text(plan(get_model("Qwen/Qwen3.5-35B-A3B"), parse_gpus("1xH100"), ServeConfig()))
    assert time.perf_counter() - start < 0.3


def test_plan_does_not_import_heavy_packages():
    code = ("import sys; from doctor.cli.main import main; "
            "sys.argv=['qwen-doctor','plan','--gpus','1xH200','--format','json']\n"
            "try: main()\nexcept SystemExit: pass\n"
            "print(sorted(m for m in ('torch','vllm','sglang','transformers','numpy') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip().splitlines()[-1] == "[]"
