"""A bug report's own words name an engine bug: a regression between releases, an upstream fix, a hang with no
error, an internal check in its title; the workaround the text or the source implies comes first
(remedies/bugclaims.py, remedies/hangphase.py). Tutorials, questions and conditions stay silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain_sources
from remedies.bugclaims import CLAIM_KIND, claim_of
from remedies.hangphase import hang_phase

ISSUE = ["### Your current environment", "```", "Collecting environment information...", "PyTorch version: 2.9.0",
         "```", "", "### Describe the bug"]


def explain(tmp_path: Path, lines: list[str]):
    path = tmp_path / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return explain_sources([path])


def steps(finding) -> str:
    return " ".join(step.text for step in finding.steps)


@pytest.mark.parametrize("sentence, working, failing", [
    ("It works with vllm 0.28.0 but fails with 0.30.0.", "vllm 0.28.0", "0.30.0"),
    ("Works fine on v0.5.9, crashes since v0.5.10 on the same box.", "v0.5.9", "v0.5.10"),
    ("After upgrading to vllm 0.31.0 the replica reports no GPUs.", None, "vllm 0.31.0"),
    ("Downgrading to 0.29.1 makes it go away.", "0.29.1", None),
    ("The same launch works with SGLang but fails with vLLM.", "SGLang", "vLLM"),
])
def test_works_with_one_release_and_fails_with_another_is_a_regression_with_the_working_one_named(
        tmp_path, sentence, working, failing):
    found = explain(tmp_path, ["# [Bug]: vLLM server does not start", "", *ISSUE, sentence])
    bug = found[0].engine_bug
    assert bug is not None and bug.claim.kind == "regression"
    assert bug.claim.working == working and bug.claim.failing == failing
    if working:
        assert f"Run what the report says works ({working})" in steps(found[0])


def test_a_hang_in_prose_names_the_distributed_phase_the_log_stopped_in_and_its_knobs(tmp_path):
    log = ["(Worker_TP0 pid=7) INFO 11-02 10:00:01 [parallel_state.py:1165] world_size=4 rank=0 local_rank=0 "
           "distributed_init_method=tcp://127.0.0.1:1234 backend=nccl",
           "(Worker_TP0 pid=7) INFO 11-02 10:00:02 [all_reduce_utils.py:378] generating GPU P2P access cache in "
           "/srv/app/.cache/vllm/gpu_p2p_access_cache_for_0,1,2,3.json"]
    found = explain(tmp_path, ["# [Bug]: vLLM TP=4 startup", "", *ISSUE,
                               "The server gets stuck after the lines below, no error at all.", "```", *log, "```"])
    bug = found[0].engine_bug
    assert found[0].crash is not None and found[0].crash.kind in (CLAIM_KIND, "title")
    assert bug.claim.kind == "hang" and bug.phase is not None and "peer-to-peer" in bug.phase.name
    text = steps(found[0])
    assert "--disable-custom-all-reduce" in text and "NCCL_P2P_DISABLE=1" in text and "py-spy dump" in text


def test_a_workaround_env_var_in_the_running_text_is_the_first_step_and_one_that_did_not_help_is_not(tmp_path):
    found = explain(tmp_path, ["Our TP=2 SGLang deployment freezes during the first request. Setting "
                               "SGLANG_ENABLE_TORCH_COMPILE=0 does not help; the workaround is NCCL_P2P_DISABLE=1."])
    bug = found[0].engine_bug
    assert bug.engine == "sglang" and bug.claim.workarounds == ("NCCL_P2P_DISABLE=1",)
    assert found[0].steps[0].text == "Workaround the report names or implies: NCCL_P2P_DISABLE=1."


def test_an_assertion_with_the_v2_model_runner_in_a_title_implies_going_back_to_the_v1_runner(tmp_path):
    found = explain(tmp_path, ["# [Bug]: AssertionError with --cpu-offload-gb on the V2 model runner", "", *ISSUE,
                               "vLLM Version: 0.31.0"])
    bug = found[0].engine_bug
    assert bug is not None and bug.claim.kind == "internal"
    assert "VLLM_USE_V2_MODEL_RUNNER=0" in steps(found[0])


def test_a_weight_key_one_engine_loads_and_the_other_misses_is_named_beside_the_entry(tmp_path):
    title = "# [Bug]: KeyError: 'model.layers.0.mlp.experts.w13_weight_scale' loading an AWQ MoE checkpoint"
    plain = explain(tmp_path, [title, "", *ISSUE, "vllm serve ./ckpt"])
    claimed = explain(tmp_path, [title, "", *ISSUE, "It works with vLLM but fails with SGLang 0.5.10."])
    assert plain[0].engine_bug is None
    assert claimed[0].remedy.id == plain[0].remedy.id and claimed[0].engine_bug.claim.working == "vLLM"


def test_an_upstream_pull_request_named_in_a_report_is_an_engine_bug(tmp_path):
    found = explain(tmp_path, ["# [Bug]: vLLM decode output is garbage", "", *ISSUE,
                               "Introduced by #41234 as far as I can tell."])
    assert found[0].engine_bug is not None and found[0].engine_bug.claim.kind == "upstream"


@pytest.mark.parametrize("page", [
    # a tutorial's condition, a setting's description
    ["# Serving Qwen3 with vLLM", "", "If the server hangs at startup, check the NCCL settings.",
     "Run `vllm serve Qwen/Qwen3-8B` and wait for the ready line."],
    ["# [Usage]: vllm env", "", *ISSUE, "```", "VLLM_USE_V2_MODEL_RUNNER=0", "NCCL_P2P_DISABLE=1", "```"],
    # a health status block and a freeze word inside a log record
    ["INFO 11-02 10:00:01 [api_server.py:1] vLLM API server version 0.30.0",
     "INFO 11-02 10:00:09 [loggers.py:1] Engine 000: Avg prompt throughput: 0.0 tokens/s, health: HEALTHY",
     "DEBUG 11-02 10:00:10 [core.py:1] EngineCore waiting for work (not stuck)"],
])
def test_tutorials_questions_env_dumps_and_other_programs_raise_no_claim(tmp_path, page):
    assert explain(tmp_path, page) == []


@pytest.mark.parametrize("page", [
    # a question how to avoid one; a page about another program (the title reader still reads their titles)
    ["# [Usage]: how to avoid the server getting stuck when the GPU is busy?", "", *ISSUE,
     "How can I make vLLM not hang when the queue is full?"],
    ["# [Bug]: my editor hangs when I open a large file", "", "It freezes for a minute."],
])
def test_questions_and_other_programs_are_no_engine_bug(tmp_path, page):
    assert all(found.engine_bug is None for found in explain(tmp_path, page))


def test_a_regression_claim_needs_an_engine_or_a_component_on_the_page():
    assert claim_of(["# [Bug]: it works with 1.2.0 but fails with 1.3.0", "", *ISSUE]) is None
    assert claim_of(["# [Bug]: vllm works with 0.10.0 but fails with 0.11.0", "", *ISSUE]) is not None


def test_a_phase_that_ended_is_not_where_a_hang_stopped():
    begun = "[2026-01-02 10:00:00 TP0] Init torch distributed begin."
    ended = "[2026-01-02 10:00:03 TP0] Init torch distributed ends. mem usage=0.12 GB"
    assert "NCCL" in hang_phase([begun]).name
    assert hang_phase([begun, ended]) is None


def test_the_v1_runner_workaround_names_the_releases_the_mined_templates_show_reading_it():
    from packaging.version import Version

    from remedies.bugclaims import v2_runner_releases, v2_workaround
    read, default = v2_runner_releases()
    assert read and default and Version(read) <= Version(default)
    assert v2_workaround().startswith("VLLM_USE_V2_MODEL_RUNNER=0 (vLLM reads it from " + read)


def test_a_tracking_issue_naming_a_workaround_env_var_is_a_regression_with_that_workaround(tmp_path):
    found = explain(tmp_path, ["# [Tracking issue]: Model Runner V2 regressions", "",
                               "Several MRV2 regressions are open, see the linked issues. Until they are fixed, set "
                               "VLLM_USE_V2_MODEL_RUNNER=0 to get the old vLLM runner back."])
    bug = found[0].engine_bug
    assert bug.claim.kind == "regression" and bug.claim.workarounds[0] == "VLLM_USE_V2_MODEL_RUNNER=0"


def test_a_title_that_fails_in_one_engine_and_works_in_the_other_names_both():
    claim = claim_of(["# [Bug]: KeyError for the experts' weight_scale in SGLang (works in vLLM)", "", *ISSUE])
    assert claim.kind == "regression" and claim.failing == "SGLang" and claim.working == "vLLM"


def test_an_assertion_in_a_title_with_the_newer_model_runner_implies_the_v1_runner():
    claim = claim_of(["# [Bug]: assertion when CPU offload is enabled with the newer model runner", "", *ISSUE,
                      "vllm serve Qwen/Qwen3-30B-A3B --cpu-offload-gb 8"])
    assert claim.kind == "internal" and claim.workarounds[0].startswith("VLLM_USE_V2_MODEL_RUNNER=0")


def test_a_connection_that_dies_and_never_recovers_is_a_hang_class_claim():
    claim = claim_of(["After two days of PD serving the NIXL transfer connection dies and never recovers; "
                      "decode requests wait forever."])
    assert claim is not None and claim.kind == "hang"


SHM_WAIT = ("(EngineCore_DP0 pid=9) INFO 11-02 10:10:00 [shm_broadcast.py:466] No available shared memory broadcast block "
            "found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming "
            "work (e.g. compilation, weight/kv cache quantization).")
DETOKENIZER_WAIT = ("[2026-02-01 10:10:00] Health check failed. Server couldn't get a response from detokenizer for last "
                    "20 seconds. tic start time: 10:09:40. last_heartbeat time: 10:09:39")


def test_the_engines_own_record_that_a_process_stopped_answering_is_a_hang_unless_the_server_moves_on(tmp_path):
    boot = "[2026-02-01 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2)"
    hung = explain(tmp_path, [boot, DETOKENIZER_WAIT, DETOKENIZER_WAIT])
    assert any(found.engine_bug is not None and found.engine_bug.claim.kind == "hang" for found in hung)
    batch = "[2026-02-01 10:10:05 TP0] Decode batch. #running-req: 3, #token: 900, token usage: 0.01"
    assert all(found.engine_bug is None for found in explain(tmp_path, [boot, DETOKENIZER_WAIT, batch]))


def test_vllms_shared_memory_broadcast_notice_alone_is_no_hang(tmp_path):
    boot = "(APIServer pid=1) INFO 11-02 10:00:00 [api_server.py:1] vLLM API server version 0.30.0"
    assert explain(tmp_path, [boot, SHM_WAIT]) == []


def test_a_pull_request_link_counts_in_a_sentence_about_a_fix_but_not_as_a_bare_source_label():
    link = "https://github.com/vllm-project/vllm/pull/41234"
    assert claim_of(["vLLM crashes on the second request; the fix is in " + link]).kind == "upstream"
    assert claim_of(["# source: " + link, "INFO 01-01 10:00:00 [core.py:1] vLLM engine ready"]) is None


def test_a_hang_past_startup_with_tensor_parallel_names_the_collectives_knobs():
    phase = hang_phase(["vllm serve Qwen/Qwen3-32B --tensor-parallel-size 2",
                        "INFO 11-02 10:00:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000"])
    assert phase is not None and "tensor parallel" in phase.name
    assert any("--disable-custom-all-reduce" in knob for knob in phase.knobs)
    assert hang_phase(["vllm serve Qwen/Qwen3-8B --tensor-parallel-size 1"]) is None


def test_a_claimed_bug_names_the_known_regression_of_the_release_its_log_prints(tmp_path):
    found = explain(tmp_path, ["# [Bug]: Gemma 4 MTP fails at init on vllm 0.25.1, worked with 0.24.0", "", *ISSUE,
                               "vLLM Version: 0.25.1",
                               "It dies with `a and b must have same reduction dim` right after the drafter loads."])
    bug = found[0].engine_bug
    assert bug is not None and bug.release == "0.25.1"
    assert any(a.id == "VLLM-0.25.1-GEMMA4-MTP-V1-RUNNER-REDUCTION-DIM" for a in bug.advisories)


@pytest.mark.parametrize("title", ["# [Bug]: No GPUs in the serving replica after vLLM upgrade",
                                   "# [Bug]: vLLM replica reports no CUDA GPUs since the image update"])
def test_a_failure_after_an_upgrade_is_a_regression_claim(title):
    assert claim_of([title, "", *ISSUE]).kind == "regression"


def test_a_health_check_failure_in_another_formats_log_record_is_no_prose_claim():
    record = ("2025-11-02T10:00:00.123456Z  WARN sglang_router_rs::core::worker: src/core/worker.rs:563: Health check "
              "failed for worker http://10.0.0.5:30001: connection refused")
    assert claim_of(["sglang router", record]) is None
    assert claim_of(["The sglang router keeps failing health checks under load.", record]).kind == "hang"
