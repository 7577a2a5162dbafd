"""`qwen-doctor plan`: the engines' accounting per version, layouts, profiles, boot logs and bad input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from doctor.cli.main import cli

FIXTURES = Path(__file__).parent / "data" / "published_kv"


def run(*args: str):
    return CliRunner().invoke(cli, ["plan", *args])


def tokens(output: str) -> int:
    return int(re.search(r"KV capacity\s+([\d,]+) tokens", output).group(1).replace(",", ""))


@pytest.mark.parametrize("model, logged", [("Qwen/Qwen3.5-35B-A3B", 3_052_105),
                                           ("Qwen/Qwen3.5-35B-A3B-FP8", 4_662_418)])
def test_the_h200_truth_of_vllm_0_26_within_two_percent(model, logged):
    r = run("--gpus", "1xH200", "--language-model-only", "--backend-version", "0.26.0", "--model", model)
    assert r.exit_code == 0, r.output
    assert abs(tokens(r.output) / logged - 1) <= 0.02
    assert "± " in r.output and "(0.920)" in r.output


@pytest.mark.parametrize("gpus", ["1xRTX5090", "2xRTX3090", "1xGB10", "8xH20"])
def test_acceptance_gpus_are_planned(gpus):
    r = run("--gpus", gpus)
    assert r.exit_code in (0, 1), r.output
    assert "qwen-doctor plan:" in r.output


def _unified_note(*args: str) -> str:
    (line,) = [line for line in run("--gpus", "1xGB10", *args).output.splitlines() if "shares one memory" in line]
    return line


@pytest.mark.parametrize("backend, old, new", [("vllm", "0.11.0", "0.11.1"), ("sglang", "0.5.3", "0.5.4")])
def test_gb10_warning_names_the_free_memory_the_engine_version_reads(backend, old, new):
    """vLLM up to 0.11.0 and SGLang up to 0.5.3 size from MemFree (page cache counts as used); later ones from
    MemAvailable (doctor/planner/versions.py)."""
    before = _unified_note("--backend", backend, "--backend-version", old)
    assert f"{old} takes as free memory cudaMemGetInfo's MemFree" in before
    assert f"MemAvailable from {new} on" in before and "drop_caches" in before
    after = _unified_note("--backend", backend, "--backend-version", new)
    assert f"{new} takes as free memory the host's MemAvailable (since {new})" in after
    assert "page cache counts as free" in after and "drop_caches" not in after


def test_without_tp_every_layout_is_listed_best_first():
    r = run("--gpus", "8xA100-80G", "--model", "fp8", "--backend-version", "0.26.0")
    assert r.exit_code == 0, r.output
    listed = re.findall(r"^\s+\d+\. (TP \d+ x PP \d+ x DP \d+(?: \+ EP)?)", r.output, re.M)
    assert len(listed) > 4
    assert "TP 8 x PP 1 x DP 1" not in listed       # FP8 blocks: 512 / 8 = 64 is not a multiple of 128
    assert "fits" in r.output


def test_the_utilisation_default_follows_the_version():
    old = run("--gpus", "1xH200", "--tp", "1", "--backend-version", "0.19.1", "--language-model-only")
    new = run("--gpus", "1xH200", "--tp", "1", "--backend-version", "0.26.0", "--language-model-only")
    assert "(0.900)" in old.output and "(0.920)" in new.output


def test_kv_cache_memory_replaces_the_budget():
    r = run("--gpus", "1xH200", "--tp", "1", "--backend-version", "0.26.0", "--kv-cache-memory", "20GiB",
            "--language-model-only")
    assert re.search(r"KV cache\s+20\.00 GiB", r.output), r.output


def test_from_log_reproduces_the_logged_boot_and_replans_other_flags(tmp_path):
    import yaml

    entry = next(e for e in yaml.safe_load((FIXTURES / "vllm.yaml").read_text())["entries"]
                 if e["id"] == "h200-vllm-0.26-bf16")
    log = tmp_path / "server.log"
    log.write_text("(APIServer pid=1) INFO non-default args: {'model': '/m', 'language_model_only': True}\n"
                   + "\n".join(entry["log"]) + "\n(EngineCore pid=1) INFO Initializing a V1 LLM engine (v0.26.0) "
                   "with config: max_seq_len=262144, tensor_parallel_size=1, pipeline_parallel_size=1, "
                   "kv_cache_dtype=auto, enable_prefix_caching=False\n")
    same = run("--from-log", str(log), "--language-model-only")
    assert same.exit_code == 0, same.output
    assert abs(tokens(same.output) / 3_052_105 - 1) < 0.001
    fp8_kv = run("--from-log", str(log), "--language-model-only", "--kv-cache-dtype", "fp8")
    assert 1.9 < tokens(fp8_kv.output) / tokens(same.output) < 2.1


def test_plan_profile_plans_the_profiles_flags():
    r = run("--profile", "vllm-stable", "--gpus", "2xH100")
    assert r.exit_code == 0, r.output
    assert "(TP 2, PP 1, DP 1)" in r.output


@pytest.mark.parametrize("args", [
    ["--gpus", "X:0"], ["--gpus", "X:nan"], ["--gpus", "X:inf:9.0"], ["--gpus", "X:-4"],
    ["--gpus", "1xH200", "--tp", "0"], ["--gpus", "1xH200", "--pp", "100", "--tp", "1"],
    ["--gpus", "1xH200", "--tp", "1", "--overhead-gib", "nan"], ["--gpus", "1xH200", "--tp", "1", "--overhead-gib", "inf"],
    ["--gpus", "1xH200", "--tp", "1", "--gpu-memory-utilization", "nan"],
    ["--gpus", "1xH200", "--tp", "1", "--gpu-memory-utilization", "1.5"],
    ["--gpus", "99999999999999xH200"], ["--gpus", "1xH200", "--max-model-len", "99999999999999"],
    ["--gpus", "1xH200", "--kv-cache-memory", "abc"], ["--gpus", "1xH200", "--backend-version", "foo"],
    ["--gpus", "1xH200", "--from-log", "/nonexistent/server.log"],
])
def test_bad_plan_arguments_are_one_line_and_exit_2(args, capsys):
    from doctor.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(["plan", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("qwen-doctor: error: "), err
