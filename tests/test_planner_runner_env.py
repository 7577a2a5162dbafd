"""vLLM's memory environment variables (VLLM_USE_V2_MODEL_RUNNER, the DeepEP buffer sizes) are read from the
deployment's and the facts' environment, never from the environment qwen-doctor itself runs in;
VLLM_USE_V2_MODEL_RUNNER decides vLLM's model runner up to 0.33, as config/vllm.py use_v2_model_runner does."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from doctor.cli.main import cli
from doctor.models import get_model
from doctor.planner import ServeConfig, parse_gpus, plan
from doctor.planner.errors import PlanInputError
from doctor.planner.flags import env_kwargs
from doctor.planner.overhead import v1_model_runner
from tests.conftest import facts_with

MTP = {"mtp_tokens": 3, "speculative_method": "mtp"}


@pytest.mark.parametrize("version, env, v1", [
    ("0.26.0", None, True), ("0.26.0", True, False),       # hybrid models default to V1 before 0.29; =1 opts in
    ("0.30.0", None, False), ("0.30.0", False, True),      # V2 by default from 0.29; =0 goes back to V1
    ("0.34.0", False, False)])                             # 0.34 has no V1 GPU runner and no such variable
def test_the_variable_decides_the_runner_before_the_version_s_default(version, env, v1):
    assert v1_model_runner(ServeConfig(backend_version=version, v2_model_runner=env, **MTP)) is v1


def test_the_variable_reads_as_vllm_reads_it():
    assert env_kwargs({"VLLM_USE_V2_MODEL_RUNNER": "0"}) == {"v2_model_runner": False}
    assert env_kwargs({"VLLM_USE_V2_MODEL_RUNNER": "1"}) == {"v2_model_runner": True}
    assert env_kwargs({}) == {}
    with pytest.raises(PlanInputError, match="VLLM_USE_V2_MODEL_RUNNER='true' is not an integer"):
        env_kwargs({"VLLM_USE_V2_MODEL_RUNNER": "true"})
    assert env_kwargs({"VLLM_USE_V2_MODEL_RUNNER": "true"}, backend="sglang") == {}   # SGLang reads none of them
    assert env_kwargs({"VLLM_DEEPEP_BUFFER_SIZE_MB": "2048", "VLLM_DEEPEP_HIGH_THROUGHPUT_FORCE_INTRA_NODE": "1"}) == \
        {"deepep_buffer_mb": 2048, "deepep_force_intranode": True}


def _bundle(tmp_path, env: dict[str, str]):
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts_with("h200", env=env).data))
    return str(path)


def test_plan_facts_plans_the_runner_the_bundle_s_environment_selects(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "1")     # qwen-doctor's own environment is not the engine's
    args = ["plan", "--tp", "1", "--backend-version", "0.30.0", "--mtp", "3", "--format", "json"]

    def kv(env: dict[str, str]) -> int:
        result = CliRunner().invoke(cli, [*args, "--facts", _bundle(tmp_path, env)])
        assert result.exit_code == 0, result.output
        return json.loads(result.output)["sections"]["plan"]["kv_tokens"]

    default, v1 = kv({}), kv({"VLLM_USE_V2_MODEL_RUNNER": "0"})
    spec, h200 = get_model("Qwen/Qwen3.5-35B-A3B"), parse_gpus("1xH200")
    cfg = ServeConfig(backend_version="0.30.0", mtp_tokens=3)
    assert default == plan(spec, h200, cfg).kv_tokens
    assert v1 == plan(spec, h200, cfg.with_(v2_model_runner=False)).kv_tokens < default


def test_a_bundle_value_vllm_cannot_read_is_one_line_and_exit_2(tmp_path):
    from doctor.cli.main import main

    with pytest.raises(SystemExit) as stop:
        main(["plan", "--facts", _bundle(tmp_path, {"VLLM_USE_V2_MODEL_RUNNER": "yes"}), "--tp", "1"])
    assert stop.value.code == 2


def test_a_deployment_s_environment_sets_it():
    from doctor.deployment import from_argv
    from doctor.planner.flags import deployment_kwargs

    deployment = from_argv(["vllm", "serve", "Qwen/Qwen3.5-35B-A3B"], "vllm", {"VLLM_USE_V2_MODEL_RUNNER": "0"})
    assert deployment_kwargs(deployment)["v2_model_runner"] is False



def test_check_fails_the_plan_where_the_engine_would_not_read_its_variable_and_skips_divisibility():
    from doctor.facts.model import Facts
    from tests.conftest import run

    results = run(Facts(facts_with("h200", env={"VLLM_USE_V2_MODEL_RUNNER": "yes"}).data),
                  only=("QD-PLAN-001", "QD-PLAN-002"))
    [plan_result], [divisibility] = results["QD-PLAN-002"], results["QD-PLAN-001"]
    assert plan_result.status.value == "fail" and "VLLM_USE_V2_MODEL_RUNNER='yes' is not an integer" in plan_result.summary
    assert divisibility.status.value == "skip" and "see QD-PLAN-002" in divisibility.summary
