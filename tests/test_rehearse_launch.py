"""`deploy --rehearse`: the profile's command served from the rehearsal folder with dummy weights, the
report saying the weights were random, and `--dry-run` printing the command and the folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from doctor.deploy.spec import from_argv
from doctor.deployment import read_options


def flag_value(argv: list[str], name: str) -> str | None:
    """The value the last `name` option of a rendered command line carries."""
    found = [f.value for f in read_options(argv) if f.option == name and isinstance(f.value, str)]
    return found[-1] if found else None
from doctor.rehearse.launch import NOTICE, rehearsal_argv, rehearse_spec


def dry_run(tmp_path: Path, profile: str, *more: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "QWEN_DOCTOR_CACHE": str(tmp_path / "cache"), "HF_HUB_CACHE": str(tmp_path / "hf")}
    return subprocess.run([sys.executable, "-m", "doctor", "deploy", "--profile", profile, "--rehearse", "--dry-run",
                           "--report", str(tmp_path / "r.json"), *more], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.parametrize("profile, model_flag, extra", [
    ("vllm-stable", "vllm serve ", "--structured-outputs-config"),
    ("sglang-stable", "--model-path ", "--constrained-json-disable-any-whitespace")])
def test_dry_run_prints_a_dummy_weight_command_and_the_folder(tmp_path: Path, profile: str, model_flag: str,
                                                               extra: str) -> None:
    r = dry_run(tmp_path, profile)
    command = r.stderr.split("would run:\n", 1)[1].splitlines()[0]
    folder = str(tmp_path / "cache" / "rehearsal")
    assert "--load-format dummy" in command
    assert f"{model_flag}{folder}/Qwen3.5-35B-A3B-" in command
    assert "--served-model-name Qwen/Qwen3.5-35B-A3B" in command and extra in command
    assert "--reasoning-parser qwen3" in command and "HF_HUB_OFFLINE=1" in command
    assert f"rehearsal checkpoint folder: {folder}/Qwen3.5-35B-A3B-" in r.stderr
    assert not (tmp_path / "cache").exists(), "a dry run writes no checkpoint folder"
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["sections"]["rehearsal"]["weights"] == "random"
    first = report["results"][0]
    assert first["check_id"] == "QD-DEPLOY-REHEARSAL" and first["summary"] == NOTICE


def test_model_option_picks_the_variant_and_its_folder(tmp_path: Path) -> None:
    r = dry_run(tmp_path, "vllm-stable", "--model", "fp8")
    command = r.stderr.split("would run:\n", 1)[1].splitlines()[0]
    assert "/Qwen3.5-35B-A3B-FP8-" in command and "--served-model-name Qwen/Qwen3.5-35B-A3B-FP8" in command


def test_a_dry_run_plans_the_model_the_unwritten_folder_stands_for(tmp_path: Path) -> None:
    dry_run(tmp_path, "sglang-stable", "--model", "fp8")
    plan_results = [r for r in json.loads((tmp_path / "r.json").read_text())["results"]
                    if r["check_id"].startswith("QD-PLAN-")]
    assert plan_results and not any("cannot be read" in r["summary"] for r in plan_results)


def test_argv_keeps_every_flag_and_replaces_model_tokenizer_and_load_format() -> None:
    argv = ["python", "-m", "sglang.launch_server", "--model-path", "Qwen/X", "--tokenizer-path", "Qwen/X",
            "--load-format", "auto", "--tp-size", "2", "--served-model-name", "q"]
    out = rehearsal_argv(argv, "sglang", "/c/f", "Qwen/X")
    assert flag_value(out, "--model-path") == flag_value(out, "--tokenizer-path") == "/c/f"
    assert flag_value(out, "--load-format") == "dummy" and out.count("--load-format") == 1
    assert flag_value(out, "--served-model-name") == "q" and flag_value(out, "--tp-size") == "2"


def test_a_profile_with_its_own_structured_output_config_keeps_it() -> None:
    argv = ["vllm", "serve", "m", "--structured-outputs-config", '{"backend": "guidance"}']
    out = rehearsal_argv(argv, "vllm", "/f", "m")
    assert out[2] == "/f" and out.count("--structured-outputs-config") == 1
    assert flag_value(out, "--structured-outputs-config") == '{"backend": "guidance"}'


def test_rehearse_spec_builds_the_folder_and_keeps_the_served_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    spec = from_argv(["vllm", "serve", "Qwen/Qwen3.5-35B-A3B", "--port", "8123"], {}, "vllm", "p")
    new, rehearsal = rehearse_spec(spec, "Qwen/Qwen3.5-35B-A3B", root=tmp_path)
    assert new.argv[2] == str(rehearsal.folder) and (rehearsal.folder / "tokenizer.json").is_file()
    assert new.served_model_name == "Qwen/Qwen3.5-35B-A3B" and new.port == 8123
    assert new.env["HF_HUB_OFFLINE"] == "1"
    result = rehearsal.result()
    assert result.status.value == "ok" and "random" in result.summary
