"""Rules the recipes encode: speculative decoding (MTP) with pipeline parallel is flagged by lint and by check."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.recipes import speculative_without_pp
from doctor.context import CheckContext
from doctor.lint import lint_path, lint_shell
from doctor.recipe_rules import speculative_with_pp
from doctor.results import Status
from profiles import load_profile
from tests.conftest import load_fixture

MTP = '{"method":"mtp","num_speculative_tokens":1}'


@pytest.mark.parametrize("backend, flags, flagged", [
    ("vllm", {"--pipeline-parallel-size": "2", "--speculative-config": MTP}, True),
    ("vllm", {"--pipeline-parallel-size": "1", "--speculative-config": MTP}, False),
    ("vllm", {"--tensor-parallel-size": "2", "--speculative-config": MTP}, False),
    ("sglang", {"--pp-size": "2", "--speculative-algorithm": "NEXTN"}, False),
    ("sglang", {"--pp-size": "2", "--speculative-algorithm": "EAGLE"}, False),
    ("sglang", {"--pp-size": "2", "--speculative-algorithm": "DFLASH"}, True),
])
def test_speculative_decoding_with_pipeline_parallel(backend: str, flags: dict, flagged: bool) -> None:
    assert (speculative_with_pp(backend, flags) is not None) is flagged


def test_lint_flags_mtp_with_pp_in_a_shell_command() -> None:
    text = f"vllm serve Qwen/Qwen3.5-35B-A3B --tensor-parallel-size 8 \\\n  --pipeline-parallel-size 2 --speculative-config '{MTP}'\n"
    findings = [f for f in lint_shell(text) if f.rule_id == "QL025"]
    assert len(findings) == 1 and findings[0].line == 1 and "pipeline parallelism" in findings[0].wrong
    assert not [f for f in lint_shell(text.replace("--pipeline-parallel-size 2", "")) if f.rule_id == "QL025"]


def test_lint_flags_mtp_with_pp_in_a_profile(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text("name: p\nbackend: vllm\nflags:\n  pipeline-parallel-size: 2\n"
                       "  speculative-config: {method: mtp, num_speculative_tokens: 1}\n")
    assert any(f.rule_id == "QL025" for f in lint_path(profile))


def test_check_fails_a_profile_that_combines_them(tmp_path: Path) -> None:
    text = load_profile("vllm-multinode").path.read_text()
    path = tmp_path / "mtp-pp.yaml"
    path.write_text(text.replace("flags:\n", f"flags:\n  speculative-config: '{MTP}'\n", 1))
    facts = load_fixture("h200")
    bad = speculative_without_pp(CheckContext(facts=facts, profile=load_profile(path)))
    assert bad.status is Status.FAIL and "pipeline" in bad.summary
    assert speculative_without_pp(CheckContext(facts=facts, profile=load_profile("vllm-multinode"))).status is Status.OK
    assert speculative_without_pp(CheckContext(facts=facts)).status is Status.SKIP


@pytest.mark.parametrize("backend, parser, flagged", [
    ("vllm", "qwen3_coder", False), ("vllm", "qwen3_xml", False), ("vllm", "hermes", True),
    ("vllm", "qwen3_json", True), ("sglang", "qwen3_coder", False), ("sglang", "qwen3_xml", True),
    ("sglang", "qwen25", True),
])
def test_tool_call_parser_for_qwen35(backend: str, parser: str, flagged: bool) -> None:
    from doctor.recipe_rules import tool_parser_issue

    assert (tool_parser_issue(backend, {"--tool-call-parser": parser}) is not None) is flagged


def test_lint_names_the_tool_parser_that_loses_every_call() -> None:
    text = "python -m sglang.launch_server --model-path Qwen/Qwen3.5-35B-A3B --tool-call-parser qwen3_xml\n"
    [finding] = [f for f in lint_shell(text) if f.rule_id == "QL026"]
    assert "qwen3_coder" in finding.wrong and finding.did_you_mean == ("--tool-call-parser qwen3_coder",)


def test_check_judges_the_profiles_tool_parser(tmp_path: Path) -> None:
    from checks.recipes import tool_call_parser

    facts = load_fixture("h200")
    assert tool_call_parser(CheckContext(facts=facts, profile=load_profile("recipe-qwen3.6-fp8-h200"))).status \
        is Status.OK
    path = tmp_path / "hermes.yaml"
    path.write_text(load_profile("recipe-qwen3.6-fp8-h200").path.read_text().replace(
        "tool-call-parser: qwen3_coder", "tool-call-parser: hermes"))
    assert tool_call_parser(CheckContext(facts=facts, profile=load_profile(path))).status is Status.FAIL


def test_sglang_language_model_only_is_flagged_and_the_plan_keeps_the_vision_tower() -> None:
    from doctor.models import get_model
    from doctor.planner import ServeConfig, parse_gpus, plan

    text = "python -m sglang.launch_server --model-path Qwen/Qwen3.5-35B-A3B-FP8 --language-model-only\n"
    assert [f.rule_id for f in lint_shell(text, "0.5.23") if f.rule_id == "QL027"] == ["QL027"]
    assert not [f for f in lint_shell(text.replace("sglang.launch_server --model-path", "vllm.entrypoints.openai.api_server --model"))
                if f.rule_id == "QL027"]
    spec, gpus = get_model("Qwen/Qwen3.5-35B-A3B-FP8"), parse_gpus("1xH100")
    sglang = plan(spec, gpus, ServeConfig(backend="sglang", language_model_only=True))
    vllm = plan(spec, gpus, ServeConfig(backend="vllm", language_model_only=True))
    assert sglang.ranks[0].weights.get("vision", 0) > 0 and vllm.ranks[0].weights.get("vision", 0) == 0


@pytest.mark.parametrize("version, seqs, blocks, full, verdict", [
    ("0.26.0", 512, 335, False, "clamp"),    # eager or PIECEWISE graphs: at most 335 sequences run
    ("0.26.0", 512, 335, True, "refuse"),    # FULL graphs (the default): the H100 boot refused
    ("0.18.1", 1024, 278, True, "clamp"),               # before vllm#38270: capture sizes capped
    ("0.26.0", 256, 278, True, "pass"),
])
def test_concurrency_limit_against_mamba_blocks_per_release(version, seqs, blocks, full, verdict) -> None:
    from doctor.recipe_rules import mamba_concurrency

    assert mamba_concurrency(version, seqs, blocks, full)[0] == verdict


def test_check_fails_an_mtp_profile_whose_concurrency_exceeds_the_mamba_blocks(tmp_path: Path) -> None:
    from checks.recipes import mamba_concurrency_limit

    facts = load_fixture("h200")
    source = load_profile("recipe-qwen3.5-bf16-h200-mtp").path.read_text()
    path = tmp_path / "wide.yaml"
    path.write_text(source.replace("flags:\n", "flags:\n  max-num-seqs: 8192\n", 1))
    wide = mamba_concurrency_limit(CheckContext(facts=facts, profile=load_profile(path)))
    assert wide.status is Status.FAIL and "refuses to start" in wide.summary
    assert mamba_concurrency_limit(CheckContext(facts=facts, profile=load_profile("recipe-qwen3.5-bf16-h200-mtp"))
                                   ).status is Status.OK


def test_lint_flags_mtp_with_pp_in_python_engine_arguments() -> None:
    from doctor.lint import lint_python

    code = ('llm = LLM(model="Qwen/Qwen3.5-35B-A3B", tensor_parallel_size=8, pipeline_parallel_size=2,\n'
            '          speculative_config={"method": "mtp", "num_speculative_tokens": 1})\n')
    assert [f.line for f in lint_python(code) if f.rule_id == "QL025"] == [1]
    assert not [f for f in lint_python(code.replace("pipeline_parallel_size=2", "pipeline_parallel_size=1"))
                if f.rule_id == "QL025"]
