"""vLLM's --max-model-len auto / -1 (fit the length to the KV cache) and a context length above the model's derived
one, per engine release: how each is read, what the plan then chooses or refuses."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from doctor.cli.main import cli
from doctor.deployment.table import SettingError, read
from doctor.flags import load_schema, validate_args
from doctor.flags.values import AUTO_LENGTH, human_readable_int_or_auto
from doctor.models import get_model
from doctor.planner import ServeConfig, plan
from doctor.planner.autofit import NO_TOKEN
from doctor.planner.context_length import allows_longer
from doctor.planner.errors import PlanInputError
from doctor.planner.flags import env_kwargs
from doctor.planner.hardware import Hardware, get_gpu

NVFP4 = "nvidia/Qwen3.6-35B-A3B-NVFP4"


@pytest.mark.parametrize("text", ["auto", "AUTO", " Auto ", "-1", " -1"])
def test_auto_and_minus_one_are_the_auto_fit_length_as_vllm_reads_them(text: str) -> None:
    # vllm/utils/argparse_utils.py human_readable_int_or_auto: value.strip(); "-1" or value.lower() == "auto"
    assert human_readable_int_or_auto(text) == AUTO_LENGTH
    assert read("--max-model-len", text, "vllm") == ("max_model_len", AUTO_LENGTH)


def test_sglang_context_length_takes_no_auto() -> None:
    with pytest.raises(SettingError):
        read("--context-length", "auto", "sglang")
    with pytest.raises(PlanInputError):
        ServeConfig(backend="sglang", max_model_len=AUTO_LENGTH).validate()


@pytest.mark.parametrize("version", ["0.17.0", "0.20.1", "0.26.0", "0.30.0", "0.34.0"])
def test_every_vllm_schema_accepts_auto_for_max_model_len_only(version: str) -> None:
    schema = load_schema("vllm", version)
    for good in ("auto", "-1", "32k"):
        assert not validate_args(["--max-model-len", good], schema), good
    # --max-num-batched-tokens reads human_readable_int, which has no auto (int("auto") fails)
    assert [i.kind for i in validate_args(["--max-num-batched-tokens", "auto"], schema)] == ["bad_type"]


def _rtx5090(utilization: float, **kwargs) -> object:
    # 8 sequences: a cache sized for one long request holds fewer Mamba cache blocks than the default 256, which
    # vLLM refuses with FULL CUDA graphs (tests/test_planner_mamba_blocks.py)
    cfg = ServeConfig(backend_version="0.26.0", gpu_memory_utilization=utilization, **{"max_num_seqs": 8, **kwargs})
    return plan(get_model(NVFP4), Hardware(get_gpu("RTX5090"), 1), cfg)


def test_auto_plans_the_longest_length_one_request_fits_and_no_longer() -> None:
    derived = get_model(NVFP4).max_position_embeddings
    fitted = _rtx5090(0.8, max_model_len=AUTO_LENGTH)
    assert fitted.fits and fitted.max_model_len < derived
    assert fitted.max_concurrency >= 1
    assert any(n.startswith(f"--max-model-len auto: vLLM 0.26.0 reduces max_model_len from {derived:,} to "
                            f"{fitted.max_model_len:,}") for n in fitted.notes)
    # the same length given by hand plans the same cache; one block longer does not hold one request
    given = _rtx5090(0.8, max_model_len=fitted.max_model_len)
    assert given.fits and given.kv_tokens == fitted.kv_tokens
    longer = _rtx5090(0.8, max_model_len=fitted.max_model_len + fitted.ranks[0].block_size)
    assert any(p.startswith("To serve at least one request") for p in longer.problems)


def test_auto_keeps_the_derived_length_where_it_fits() -> None:
    derived = get_model(NVFP4).max_position_embeddings
    roomy = _rtx5090(0.95, max_model_len=AUTO_LENGTH)
    assert roomy.fits and roomy.max_model_len == derived
    assert any(n.startswith(f"--max-model-len auto: vLLM 0.26.0 keeps the model's full context length {derived:,}")
               for n in roomy.notes)


def test_auto_with_no_room_for_one_token_is_refused_in_vllms_words() -> None:
    starved = _rtx5090(0.95, max_model_len=AUTO_LENGTH, kv_cache_memory_gib=0.01)
    assert starved.problems == [NO_TOKEN]


def test_plan_cli_takes_auto_and_refuses_it_for_sglang_in_one_line() -> None:
    out = CliRunner().invoke(cli, ["plan", "--gpus", "1xH200", "--backend-version", "0.26.0", "--max-model-len",
                                   "auto"])
    assert out.exit_code == 0, out.output
    assert "--max-model-len auto: vLLM 0.26.0 keeps the model's full context length 262,144" in out.output
    refused = subprocess.run([sys.executable, "-m", "doctor", "plan", "--gpus", "1xH200", "--backend", "sglang",
                              "--context-length", "-1"], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr


def test_a_vllm_length_above_the_derived_one_starts_only_with_its_override() -> None:
    derived = get_model(NVFP4).max_position_embeddings
    refused = _rtx5090(0.95, max_model_len=derived + 1024)
    assert any(p.startswith(f"User-specified max_model_len ({derived + 1024}) is greater than the derived "
                            f"max_model_len ({derived}): vllm 0.26.0 refuses to start; "
                            "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 lets it through") for p in refused.problems)
    allowed = _rtx5090(0.95, max_model_len=derived + 1024,
                       **env_kwargs({"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "true"}, "vllm"))
    assert not any("greater than the derived" in p for p in allowed.problems)


def test_an_sglang_context_length_above_the_derived_one_is_refused_in_sglangs_words() -> None:
    spec = get_model("Qwen/Qwen3.5-35B-A3B-FP8")
    derived = spec.max_position_embeddings
    cfg = ServeConfig(backend="sglang", backend_version="0.5.16", max_model_len=derived * 2)
    refused = plan(spec, Hardware(get_gpu("H200"), 1), cfg)
    assert any(p.startswith(f"User-specified context_length ({derived * 2}) is greater than the derived "
                            f"context_length ({derived}). This may lead to incorrect model outputs or CUDA errors: "
                            "sglang 0.5.16 refuses to start; SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")
               for p in refused.problems)
    relaxed = cfg.with_(**env_kwargs({"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}, "sglang"))
    assert not any("greater than the derived" in p for p in plan(spec, Hardware(get_gpu("H200"), 1), relaxed).problems)


@pytest.mark.parametrize("version, env, allowed", [
    ("0.5.0rc2", {}, True),                                                  # get_bool_env_var(..., default="True")
    ("0.5.0rc2", {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "0"}, False),
    ("0.5.1", {}, False),                                                    # default "false" from 0.5.1
    ("0.5.2", {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "yes"}, False),  # get_bool_env_var: "true" / "1" only
    ("0.5.3", {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "yes"}, True),   # EnvBool from 0.5.3
    ("0.5.23", {"SGL_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}, True),       # the SGL_ name is copied over
    ("0.5.23", {}, False),
])
def test_each_sglang_release_reads_its_context_length_override(version: str, env: dict[str, str],
                                                               allowed: bool) -> None:
    assert allows_longer("sglang", version, env) is allowed
