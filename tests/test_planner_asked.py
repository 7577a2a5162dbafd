"""What the user asked for is what is planned: an explicit layout without --tp, and an engine version outside the
releases the planner's rules cover (said in one line, planned with the nearest covered one)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from doctor.cli.main import cli
from doctor.models import get_model
from doctor.planner import ServeConfig, parse_gpus, plan
from doctor.planner.layouts import plan_layouts
from doctor.planner.versions import covered_range, model_support_problem, nearest_covered

SPEC = get_model("Qwen/Qwen3.5-35B-A3B")


def run(*args: str):
    return CliRunner().invoke(cli, ["plan", *args])


def test_dp_with_expert_parallel_without_tp_plans_that_layout_and_lists_the_others_after_it():
    plans = plan_layouts(SPEC, parse_gpus("8xH200"), ServeConfig(dp=8, expert_parallel=True))
    first = plans[0].config
    assert (first.tp, first.pp, first.dp, first.expert_parallel) == (1, 1, 8, True)
    assert len(plans) > 1
    rest = plans[1:]
    assert [p.config for p in rest] == [p.config for p in sorted(rest, key=lambda p: (not p.fits,
                                                                                        -p.max_concurrency * p.config.dp,
                                                                                        p.config.pp, p.config.tp,
                                                                                        p.config.expert_parallel))]


def test_the_cli_plans_the_asked_layout_in_full_and_says_the_list_starts_with_it():
    result = run("--gpus", "8xH200", "--dp", "8", "--enable-expert-parallel")
    assert "the one asked for first" in result.output
    assert "(TP 1, PP 1, DP 8, EP)" in result.output
    plans = plan_layouts(SPEC, parse_gpus("8xH200"), ServeConfig(dp=8, expert_parallel=True))
    asked = plans[0].max_concurrency * 8
    better = sum(1 for p in plans[1:] if p.fits and p.max_concurrency * p.config.dp > asked)
    assert f"then the others best first, {better} of them serving more requests" in result.output


def test_dp_alone_keeps_the_engine_defaults_it_leaves_unsaid_pp_1_and_no_expert_parallel():
    plans = plan_layouts(SPEC, parse_gpus("8xH200"), ServeConfig(dp=4))
    first = plans[0].config
    assert (first.tp, first.pp, first.dp, first.expert_parallel) == (2, 1, 4, False)
    assert any(p.config.expert_parallel for p in plans[1:])   # the EP layouts follow as alternatives


def test_dp_with_pp_plans_that_pp_and_fills_tp():
    first = plan_layouts(SPEC, parse_gpus("8xH200"), ServeConfig(dp=2, pp=2))[0].config
    assert (first.tp, first.pp, first.dp, first.expert_parallel) == (2, 2, 2, False)


def test_an_asked_layout_that_leaves_gpus_idle_says_so_in_the_text_and_the_json_report():
    result = run("--gpus", "8xH200", "--dp", "3")
    assert "(TP 2, PP 1, DP 3)" in result.output
    assert "uses 6 of the 8 GPUs: 2 stay idle" in result.output
    report = json.loads(run("--gpus", "8xH200", "--dp", "3", "--format", "json").output)
    assert "TP 2 x PP 1 x DP 3 uses 6 of the 8 GPUs: 2 stay idle" in report["sections"]["plan"]["notes"]
    assert not any("idle" in line for line in run("--gpus", "8xH200", "--dp", "4").output.splitlines())


def test_expert_parallel_alone_plans_the_best_layout_with_ep():
    plans = plan_layouts(SPEC, parse_gpus("4xH200"), ServeConfig(expert_parallel=True))
    assert plans[0].config.expert_parallel
    assert plans[0] is max((p for p in plans if p.config.expert_parallel),
                           key=lambda p: (p.fits, p.max_concurrency * p.config.dp, -p.config.pp, -p.config.tp))


def test_without_an_asked_layout_the_best_comes_first():
    plans = plan_layouts(SPEC, parse_gpus("8xH200"), ServeConfig())
    assert plans[0].fits and all(plans[0].max_concurrency * plans[0].config.dp >= p.max_concurrency * p.config.dp
                                 for p in plans if p.fits)


def test_an_asked_dp_no_accepted_layout_holds_is_still_planned():
    # 3 does not divide 8 GPUs: TP = 8 // 3 = 2, and the plan of 6 GPUs is what is shown first
    plans = plan_layouts(SPEC, parse_gpus("8xH200"), ServeConfig(dp=3))
    assert (plans[0].config.tp, plans[0].config.dp) == (2, 3)


def test_a_version_older_than_the_rules_says_so_in_one_line_and_plans_with_the_oldest_covered():
    oldest, newest = covered_range("vllm")
    result = run("--gpus", "1xH200", "--tp", "1", "--backend-version", "0.6.4")
    notes = [line for line in result.output.splitlines() if "0.6.4" in line and line.strip().startswith("!")]
    assert len(notes) == 1 and f"planned with {oldest}'s" in notes[0] and f"({oldest}-{newest})" in notes[0]
    # and no vLLM that old loads the model at all: the plan says so first and exits 1
    assert result.exit_code == 1 and "vLLM 0.6.4 cannot load Qwen3_5MoeForConditionalGeneration" in result.output
    assert f"vllm {oldest} " in result.output.splitlines()[0]
    same = run("--gpus", "1xH200", "--tp", "1", "--backend-version", oldest, "--format", "json")
    older = run("--gpus", "1xH200", "--tp", "1", "--backend-version", "0.6.4", "--format", "json")
    kv = [json.loads(r.output)["sections"]["plan"]["kv_tokens"] for r in (same, older)]
    assert kv[0] == kv[1]
    assert json.loads(older.output)["sections"]["plan"]["notes"] == [notes[0].strip().lstrip("! ")]


def test_sglang_older_than_the_rules_and_a_newer_vllm_are_named_too():
    result = run("--gpus", "1xH200", "--tp", "1", "--backend", "sglang", "--backend-version", "0.4.9")
    assert "SGLang 0.4.9 is older than the releases" in result.output
    newest = covered_range("vllm")[1]
    assert nearest_covered("vllm", "9.0.0") == (newest, f"vLLM 9.0.0 is newer than the releases the planner's "
                                                        f"rules cover ({covered_range('vllm')[0]}-{newest}): "
                                                        f"planned with {newest}'s")


def test_covered_versions_and_builds_of_them_plan_as_asked_without_a_note():
    for version in ("0.26.0", "0.22.1rc1.dev26+g4721bb3aa", "0.11.2"):
        assert nearest_covered("vllm", version) == (version, None)
    p = plan(SPEC, parse_gpus("1xH200"), ServeConfig(backend_version="0.26.0", language_model_only=True))
    assert p.notes == [] and p.config.backend_version == "0.26.0"


def test_a_release_older_than_the_first_that_loads_the_model_is_a_problem_with_the_release_to_use():
    problem, fix = model_support_problem("vllm", "0.15.1", "Qwen3_5MoeForConditionalGeneration")
    assert problem.startswith("vLLM 0.15.1 cannot load Qwen3_5MoeForConditionalGeneration: the first release with "
                              "it is 0.17.0") and fix == "use vLLM 0.17.0 or later (--backend-version 0.17.0)"
    assert model_support_problem("sglang", "0.5.8", "Qwen3_5MoeForConditionalGeneration")[0].startswith(
        "SGLang 0.5.8 cannot load")
    for backend, version in (("vllm", "0.17.0"), ("sglang", "0.5.9"), ("vllm", "0.16.1rc1.dev26+g4721bb3aa")):
        assert model_support_problem(backend, version, "Qwen3_5MoeForConditionalGeneration") is None
    assert model_support_problem("vllm", "0.12.0", "LlamaForCausalLM") is None      # not the family the rule reads
    old = plan(SPEC, parse_gpus("1xH200"), ServeConfig(backend_version="0.15.1"))
    assert not old.fits and old.problems[0].startswith("vLLM 0.15.1 cannot load")
    assert old.suggestions == ["use vLLM 0.17.0 or later (--backend-version 0.17.0)"]


def test_a_vllm_built_without_release_tags_plans_with_the_newest_rules_and_asks_for_its_release():
    newest = covered_range("vllm")[1]
    for untagged in ("0.1.dev19754+g3a0914114", "0.1.dev20073+g8e685d198"):
        version, note = nearest_covered("vllm", untagged)
        assert version == newest and f"vLLM {untagged} is a build without release tags" in note
        assert f"planned with {newest}'s rules" in note and "--backend-version" in note
    # vLLM's own 0.1.x releases and builds past them keep their numbers; SGLang's source builds are not vLLM's
    assert nearest_covered("vllm", "0.1.2.dev3")[1].startswith("vLLM 0.1.2.dev3 is older than")
    assert "without release tags" not in (nearest_covered("sglang", "0.1.dev5")[1] or "")
    result = run("--gpus", "1xH200", "--tp", "1", "--backend-version", "0.1.dev19754+g3a0914114")
    notes = [line for line in result.output.splitlines() if line.strip().startswith("!") and "0.1.dev19754" in line]
    assert len(notes) == 1 and "cannot load" not in result.output
    same = run("--gpus", "1xH200", "--tp", "1", "--backend-version", newest, "--format", "json")
    untagged = run("--gpus", "1xH200", "--tp", "1", "--backend-version", "0.1.dev19754+g3a0914114", "--format", "json")
    assert [json.loads(r.output)["sections"]["plan"]["kv_tokens"] for r in (same, untagged)] == \
        [json.loads(same.output)["sections"]["plan"]["kv_tokens"]] * 2
