"""Engine bugs told by the words of the code that printed them, with no traceback in the paste.

Inputs are written from the real templates: vLLM's CUTLASS architecture guards (csrc/cutlass_extensions/common.hpp
"This kernel only supports sm120."), DeepGEMM's DG_HOST_ASSERT (deep_gemm/include/deep_gemm/common/exception.hpp
"Assertion error (<file>:<line>): <cond>"), CUTLASS's cutlassGetStatusString (include/cutlass/cutlass.h "Error
Internal") raised by vLLM's CUTLASS_CHECK, vLLM's xgrammar backend (vllm/v1/structured_output/backend_xgrammar.py
"Failed to advance FSM for request %s for tokens %s. Please file an issue.") and SGLang's spec-decoding flags.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain
from remedies.bugsigns import bare_assert, kernel_frame, sign_in, speculative_fault

DEEPGEMM = "/usr/local/lib/python3.12/dist-packages/deep_gemm/include/deep_gemm/impls/sm100_fp8_gemm_1d1d.cuh"


def explained(tmp_path: Path, text: str) -> list[explain.Finding]:
    log = tmp_path / "report.md"
    log.write_text(text)
    return explain.explain_sources([log])


@pytest.mark.parametrize("line, sign", [
    ("This kernel only supports sm120.", "kernel architecture guard"),
    ("This kernel only supports sm100a.", "kernel architecture guard"),
    (f"RuntimeError: Assertion error ({DEEPGEMM}:402): false and \"Unknown recipe\"", "vendored kernel assertion"),
    (f"RuntimeError: Failed: Assertion error {DEEPGEMM}:88 'n % 64 == 0'", "vendored kernel assertion"),
    ("RuntimeError: Error Internal", "CUTLASS kernel status"),
    ("RuntimeError: Error Arch Mismatch", "CUTLASS kernel status"),
])
def test_kernel_lines_are_signs_wherever_they_are_printed(line, sign):
    found = sign_in(line)
    assert found is not None and found.sign is not None and found.sign.name == sign


def test_a_request_for_a_bug_report_counts_only_on_a_failure():
    message = "Failed to advance FSM for request cmpl-1 for tokens 7. Please file an issue."
    assert sign_in(message, "ERROR") is not None
    assert sign_in(message, "WARNING") is None
    assert sign_in("If this is a problem, please open an issue at https://github.com/vllm-project/vllm", "INFO") is None


@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: unspecified launch failure",
    "RuntimeError: Error in the model config",   # not one of CUTLASS's status strings
    "AssertionError: /opt/app/server.py:12 failed",  # an assert naming no vendored kernel source
    "Kernel supports sm120 and sm100.",
])
def test_ordinary_failures_carry_no_sign(line):
    assert sign_in(line) is None


def test_a_vendored_assert_names_its_header_as_the_raise_site():
    frame = kernel_frame(f"RuntimeError: Assertion error ({DEEPGEMM}:402): false")
    assert frame is not None and frame.path == DEEPGEMM and frame.line == 402


def test_a_bare_assertion_in_prose_is_read_but_one_with_a_message_is_left_to_the_prose_scan():
    assert bare_assert("the scheduler dies with an `AssertionError` in `allocate_slots`") == "AssertionError"
    assert bare_assert("it fails with `AssertionError: block table full`") is None


def test_an_arch_guard_before_a_launch_failure_is_the_engines_bug(tmp_path):
    (finding, *_) = explained(tmp_path, (
        "vLLM on a DGX Spark dies at the first request with the FP8 checkpoint:\n"
        "This kernel only supports sm120.\n"
        "CUDA error: unspecified launch failure\n"))
    assert finding.engine_bug is not None and finding.engine_bug.engine == "vllm"
    assert "architecture guard" in finding.why


def test_a_deepgemm_assert_without_traceback_is_a_bug_raised_at_its_header(tmp_path):
    (finding, *_) = explained(tmp_path, (
        "WARNING 11-02 09:10:11 [fp8.py:160] DeepGEMM is disabled for this model.\n"
        f"RuntimeError: Assertion error ({DEEPGEMM}:402): false and \"Unknown recipe\"\n"))
    assert finding.engine_bug is not None and DEEPGEMM in finding.engine_bug.raised_at
    assert finding.root is not None and finding.root.frame is not None and finding.root.frame.line == 402


def test_a_cutlass_status_quoted_in_prose_is_the_bug_of_the_function_named_beside_it(tmp_path):
    (finding, *_) = explained(tmp_path, (
        "On B200 vLLM fails in the profile run: `cutlass_scaled_mm_blockwise_sm100_fp8` raises "
        "`RuntimeError: Error Internal` for the block-FP8 checkpoint.\n"))
    assert finding.engine_bug is not None
    assert "cutlass_scaled_mm_blockwise_sm100_fp8" in finding.engine_bug.raised_at


def test_an_error_record_asking_for_an_issue_is_a_bug_raised_at_its_logger_site(tmp_path):
    (finding, *_) = explained(tmp_path, (
        "Structured output with xgrammar on vLLM:\n```\n"
        "(EngineCore_0 pid=88) ERROR 08-30 14:22:10 [backend_xgrammar.py:160] Failed to advance FSM for request "
        "cmpl-1 for tokens 151645. Please file an issue.\n```\n"))
    assert finding.engine_bug is not None
    assert finding.root is not None and str(finding.root.frame).startswith("backend_xgrammar.py, line 160")


def test_a_bare_assert_outranks_the_engine_dead_wrapper_it_caused(tmp_path):
    found = explained(tmp_path, (
        "**vLLM dies under load with an `AssertionError` in `update_state_after_alloc` (CPU offloading).**\n\n"
        "```\nvllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) "
        "for the root cause.\n```\n"))
    assert found[0].engine_bug is not None and "update_state_after_alloc" in found[0].engine_bug.raised_at
    assert [f.remedy.id for f in found[1:]] == ["QD-R-VLLM-ENGINE-DEAD"]


def test_an_illegal_memory_access_with_speculative_decoding_names_the_engine_bug_beside_the_entry(tmp_path):
    (finding, *_) = explained(tmp_path, (
        "`python -m sglang.launch_server --model-path Qwen/Qwen3-Next-80B-A3B --speculative-algorithm NEXTN` "
        "crashes when a request decodes to the context length:\n"
        "`RuntimeError: CUDA error: an illegal memory access was encountered`\n"))
    assert finding.remedy.id == "QD-R-CUDA-ILLEGAL-MEMORY-ACCESS"
    assert finding.engine_bug is not None and finding.engine_bug.engine == "sglang"


def test_an_illegal_memory_access_without_speculative_decoding_stays_the_entrys_alone():
    assert speculative_fault("QD-R-CUDA-ILLEGAL-MEMORY-ACCESS",
                             lambda: ["vllm serve Qwen/Qwen3-8B", "CUDA error"]) is None


def test_healthy_records_that_mention_issues_raise_nothing(tmp_path):
    assert explained(tmp_path, (
        "INFO 10-20 11:02:03 [core.py:710] vLLM is ready; if anything looks wrong please file an issue.\n"
        "WARNING 10-20 11:02:03 [model.py:1] This should not happen unless the config changed.\n"
        "INFO 10-20 11:02:03 [api_server.py:1] Application startup complete.\n")) == []


def test_a_request_for_an_issue_the_server_carried_on_after_is_no_crash(tmp_path):
    served = '(APIServer pid=9) INFO:     127.0.0.1:3751 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    assert explained(tmp_path, (
        "(EngineCore pid=1) ERROR 12-02 21:41:15 [backend_xgrammar.py:162] Failed to advance FSM for request "
        "chatcmpl-1 for tokens 0. Please file an issue.\n" + served * 4)) == []


def test_an_assert_followed_by_503_answers_is_the_crash_not_a_survived_error(tmp_path):
    failed = 'INFO:     10.0.0.5:51234 - "POST /v1/chat/completions HTTP/1.1" 503 Service Unavailable\n'
    found = explained(tmp_path, (
        "**vLLM dies under load (prefix caching, CPU offload)**\n\n```\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/kv_transfer/kv_connector/v1/'
        'offloading_connector.py", line 301, in update_state_after_alloc\n'
        "    assert len(block_ids) >= num_blocks\nAssertionError\n" + failed * 4 + "```\n\n```\n"
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for "
        "the root cause.\n```\n"))
    assert found[0].engine_bug is not None and "update_state_after_alloc" in found[0].engine_bug.raised_at
    assert found[-1].remedy.id == "QD-R-VLLM-ENGINE-DEAD"


SCHEDULER_CUT = [
    "[2026-03-01 10:05:01 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 2710, in run_scheduler_process',
    "    scheduler.event_loop_overlap()",
]


@pytest.mark.parametrize("args, bug", [
    ("server_args=ServerArgs(model_path='Qwen/Qwen3-8B', speculative_algorithm='EAGLE')", True),
    ("server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2)", False),
])
def test_a_serving_loop_traceback_cut_before_its_exception_is_the_speculative_paths_bug_only_with_it_on(
        tmp_path, args, bug):
    path = tmp_path / "scheduler.log"
    path.write_text("\n".join([f"[2026-03-01 10:00:00] {args}", *SCHEDULER_CUT]) + "\n", encoding="utf-8")
    first = explain.explain_sources([path])[0]
    assert first.remedy.id == "QD-R-SGLANG-SCHEDULER-EXCEPTION"
    assert (first.engine_bug is not None) is bug


def test_a_serving_loop_traceback_with_its_exception_is_not_read_as_cut(tmp_path):
    path = tmp_path / "scheduler.log"
    path.write_text("\n".join(["[2026-03-01 10:00:00] server_args=ServerArgs(speculative_algorithm='EAGLE')",
                               *SCHEDULER_CUT, "torch.OutOfMemoryError: CUDA out of memory."]) + "\n", encoding="utf-8")
    assert all(found.remedy.id != "QD-R-SGLANG-SCHEDULER-EXCEPTION" or found.engine_bug is None
               for found in explain.explain_sources([path]))
