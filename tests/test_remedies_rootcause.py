"""Every failing log names its root exception and where it was raised, whether an entry matched or not."""

from __future__ import annotations

import gzip
import io
import sys

import pytest

from remedies import explain_sources
from remedies.templates import load_templates

ENTRY_AFTER_FRAMES = """\
(EngineCore_DP0 pid=51) INFO 03-02 10:00:01 [gpu_worker.py:298] Available KV cache memory: 8.42 GiB
(EngineCore_DP0 pid=51) ERROR 03-02 10:00:02 [core.py:708] EngineCore failed to start.
(EngineCore_DP0 pid=51) ERROR 03-02 10:00:02 [core.py:708] Traceback (most recent call last):
(EngineCore_DP0 pid=51) ERROR 03-02 10:00:02 [core.py:708]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 699, in run_engine_core
(EngineCore_DP0 pid=51) ERROR 03-02 10:00:02 [core.py:708]     engine_core = EngineCoreProc(*args, **kwargs)
(EngineCore_DP0 pid=51) ERROR 03-02 10:00:02 [core.py:708]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", line 699, in check_enough_kv_cache_memory
(EngineCore_DP0 pid=51) ERROR 03-02 10:00:02 [core.py:708]     raise ValueError(
(EngineCore_DP0 pid=51) ERROR 03-02 10:00:02 [core.py:708] ValueError: To serve at least one request with the models's max seq len (262144), (20.00 GiB KV cache is needed, which is larger than the available KV cache memory (8.42 GiB). Based on the available memory, the estimated maximum model length is 110000. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.
"""

BARE_ASSERT = """\
ERROR 06-23 06:27:21 [core.py:1229]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/sched/scheduler.py", line 412, in schedule
ERROR 06-23 06:27:21 [core.py:1229]     new_blocks = self.kv_cache_manager.allocate_slots(request, num_new_tokens)
ERROR 06-23 06:27:21 [core.py:1229]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_manager.py", line 301, in allocate_slots
ERROR 06-23 06:27:21 [core.py:1229]     assert num_computed_tokens <= request.num_tokens
ERROR 06-23 06:27:21 [core.py:1229]            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
ERROR 06-23 06:27:21 [core.py:1229] AssertionError
(EngineCore pid=114) Process EngineCore:
"""

CUDA_THROUGH_TORCH = """\
[2026-03-03 03:53:36 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 3130, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/layers/attention/flashinfer_backend.py", line 452, in forward_decode
    o = decode_wrapper.forward(q, kv_buffer)
  File "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py", line 412, in synchronize
    return torch._C._cuda_synchronize()
RuntimeError: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
"""


def explain(tmp_path, text: str, name: str = "server.log"):
    log = tmp_path / name
    log.write_text(text)
    return explain_sources([log])


def test_an_entry_names_the_root_exception_and_the_engine_frame_that_raised_it(tmp_path):
    first = explain(tmp_path, ENTRY_AFTER_FRAMES)[0]
    assert first.remedy.id == "QD-R-VLLM-KV-MAX-LEN-TOO-LARGE"
    assert first.root is not None and first.root.exception.startswith("ValueError: To serve at least one request")
    assert first.root.frame.path.endswith("vllm/v1/core/kv_cache_utils.py")
    assert (first.root.frame.line, first.root.frame.function) == (699, "check_enough_kv_cache_memory")
    assert "kv_cache_utils.py, line 699, in check_enough_kv_cache_memory" in first.why
    assert first.to_dict()["root"]["raised_at"].endswith("in check_enough_kv_cache_memory")


def test_a_bare_assert_is_a_crash_whose_frame_and_test_are_named(tmp_path):
    (finding,) = explain(tmp_path, BARE_ASSERT)
    assert finding.remedy.id == "QD-R-UNKNOWN" and finding.crash.exception == "AssertionError"
    assert finding.crash.frame.function == "allocate_slots" and finding.remedy.component == "vllm"
    assert "`assert num_computed_tokens <= request.num_tokens`" in finding.why


def test_a_cuda_error_surfaced_through_torch_names_the_deepest_engine_frame(tmp_path):
    first = explain(tmp_path, CUDA_THROUGH_TORCH)[0]
    assert first.remedy.id == "QD-R-CUDA-ILLEGAL-MEMORY-ACCESS"
    assert first.root.exception == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert first.root.frame.function == "forward_decode"  # the engine's frame, not torch's synchronize
    assert first.root.statement == "o = decode_wrapper.forward(q, kv_buffer)"


def test_an_entry_without_a_traceback_cites_where_its_sources_place_the_raise(tmp_path):
    first = explain(tmp_path, "ValueError: LoRA rank 64 is greater than max_lora_rank 16.\n")[0]
    assert first.remedy.id == "QD-R-VLLM-LORA-RANK" and first.root.frame is None
    assert "Root exception: ValueError: LoRA rank 64 is greater than max_lora_rank 16." in first.why
    assert "vllm/lora/peft_helper.py" in first.why


def test_a_message_no_engine_raises_says_so_instead_of_inventing_a_site(tmp_path):
    (finding,) = explain(tmp_path, "ERROR 03-02 10:00:02 [core.py:708] ZeroDivisionError: float division by zero\n")
    assert finding.remedy.id == "QD-R-UNKNOWN" and finding.located is None
    assert "Root exception: ZeroDivisionError: float division by zero" in finding.why


def test_a_gzip_log_is_read_around_the_finding_too(tmp_path):
    log = tmp_path / "server.log.gz"
    log.write_bytes(gzip.compress(ENTRY_AFTER_FRAMES.encode()))
    first = explain_sources([log])[0]
    assert first.root is not None and first.root.frame.function == "check_enough_kv_cache_memory"


def test_a_deep_line_of_a_long_log_is_found_by_counting_lines(tmp_path):
    filler = "".join(f"INFO 03-02 09:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: {i}.0 tokens/s\n"
                     for i in range(200_000))
    first = explain(tmp_path, filler + ENTRY_AFTER_FRAMES)[0]
    assert first.first.line == 200_008 and first.root.frame.function == "check_enough_kv_cache_memory"


def test_stdin_uses_the_findings_own_context(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BARE_ASSERT.encode())))
    (finding,) = explain_sources(["-"])
    assert finding.remedy.id == "QD-R-UNKNOWN" and finding.crash.exception == "AssertionError"


def test_markdown_around_a_pasted_exception_does_not_hide_it(tmp_path):
    for pasted in ("**AttributeError: 'Qwen3_5Model' object has no attribute 'capture_aux'**\n",
                   "```ValueError: The 'fa3' backend is not supported on Blackwell GPUs```\n",
                   "`AttributeError: 'EagleProposer' object has no attribute 'lm_head' `\n"):
        (finding,) = explain(tmp_path, "Reproduction:\n" + pasted)
        assert finding.remedy.id == "QD-R-UNKNOWN", pasted
        assert "`" not in finding.crash.exception and "**" not in finding.crash.exception


def test_a_closing_fence_is_not_read_as_part_of_the_message(tmp_path):
    (finding,) = explain(tmp_path, "```\nAttributeError: 'EagleProposer' object has no attribute 'positions'\n```\n")
    assert finding.crash.exception == "AttributeError: 'EagleProposer' object has no attribute 'positions'"


def test_a_short_template_is_not_claimed_for_a_message_it_only_brushes():
    index = load_templates()
    # "Not implemented error: {}" reads like any NotImplementedError once spaces are dropped
    assert index.lookup("NotImplementedError: FlashAttention V1 with FP8 KV cache no") is None
    # the runtime's own AttributeError wording is not SGLang's unless the crash came from SGLang
    assert index.lookup("AttributeError: 'EagleProposer' object has no attribute 'positions'") is None
    assert index.lookup("AttributeError: 'MultimodalDataItem' object has no attribute 'pixel_values'",
                        package="sglang") is not None
    # a few common words inside a long message say nothing
    assert index.lookup('ValueError("type fp8e4nv not supported in this architecture. The supported fp8 '
                        "dtypes are ('fp8e4b15', 'fp8e5')\")") is None


def test_a_message_retyped_in_lower_case_still_names_its_entry(tmp_path):
    (finding,) = explain(tmp_path, "valueerror: bfloat16 is only supported on gpus with compute capability of at "
                                   "least 8.0. your tesla t4 gpu has compute capability 7.5.\n")
    assert finding.remedy.id == "QD-R-VLLM-BF16-CAPABILITY"


def test_a_message_with_an_elided_middle_finds_its_template():
    hit = load_templates().lookup("ValueError: No valid attention backend found for cuda... Reasons: "
                                  "{FLASH_ATTN: [compute capability not supported]}")
    assert hit is not None and hit.template.text.startswith("No valid attention backend found for {} with")
    assert not hit.whole


def test_a_short_cut_is_read_only_with_its_class_and_one_raise_site():
    index = load_templates()
    hit = index.lookup("ValueError: No valid attention backend found for cu")  # 31 fixed characters, cut
    assert hit is not None and hit.template.kind == "raise:ValueError"
    assert index.lookup("No valid attention backend found for cu") is None  # no class: too short to tell
    # a short head followed by another message's words is not a cut
    chunked = ("ValueError: Chunked MM input disabled but max_tokens_per_mm_item (2496) is larger than "
               "max_num_batched_tokens (2048). Please increase max_num_batched_tokens.")
    found = index.lookup(chunked)
    assert found is None or not found.template.text.startswith("max_num_batched_tokens ({}) must be")


def test_an_exception_under_a_new_class_and_cut_short_finds_its_entry_by_the_entrys_samples(tmp_path):
    (finding,) = explain(tmp_path, "request error:\nvllm.entrypoints.chat_utils.ChatTemplateResolutionError: As of "
                                   "transformers v4.44, default chat template is no longer all\n")
    assert finding.remedy.id == "QD-R-VLLM-NO-CHAT-TEMPLATE"


def test_a_traceback_flattened_into_one_line_names_its_last_exception_and_frame(tmp_path):
    line = ('(EngineCore_DP0) ERROR [core.py:1104] EngineCore failed to start. (EngineCore_DP0) ERROR [core.py:1104] '
            'Traceback (most recent call last): (EngineCore_DP0) ERROR [core.py:1104] File ".../vllm/v1/engine/core.py",'
            ' line 1094, in run_engine_core (EngineCore_DP0) ERROR [core.py:1104] File '
            '".../vllm/model_executor/models/glm4_moe.py", line 512, in load_weights (EngineCore_DP0) ERROR '
            '[core.py:1104] ZeroDivisionError: float division by zero\n')
    first = explain(tmp_path, line)[0]
    assert first.remedy.id == "QD-R-UNKNOWN"
    assert first.crash.exception == "ZeroDivisionError: float division by zero"
    assert first.crash.frame.function == "load_weights" and first.remedy.component == "vllm"


def test_an_exception_pasted_above_its_traceback_names_the_deepest_engine_frame_below_it(tmp_path):
    text = ("ZeroDivisionError: float division by zero\n"
            "Traceback (most recent call last):\n"
            '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 999, in step\n'
            "    outputs = self.step_fn()\n"
            '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/spec_decode/eagle.py", line 412, in propose\n'
            "    ratio = hits / total\n")
    first = explain(tmp_path, text)[0]
    assert first.crash.frame.function == "propose"
    assert "raised below /opt/venv/lib/python3.12/site-packages/vllm/v1/spec_decode/eagle.py, line 412" in first.why


def test_an_engine_message_quoted_in_prose_without_its_class_is_read_from_the_mined_templates(tmp_path):
    (finding,) = explain(tmp_path, "Feeding a long prompt reports an error:\n"
                                   "\"The input (70000 tokens) is longer than the model's context length (40960).\"\n")
    assert finding.remedy.id == "QD-R-SGLANG-INPUT-TOO-LONG"


def test_a_message_logged_before_its_cut_traceback_names_the_deepest_engine_frame_below(tmp_path):
    text = ("(Worker_TP0 pid=77) ERROR 10-08 09:19:30 [multiproc_executor.py:671] ValueError(\"type fp8e4nv not "
            "supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')\")\n"
            "(Worker_TP0 pid=77) ERROR 10-08 09:19:30 [multiproc_executor.py:671] Traceback (most recent call last):\n"
            '(Worker_TP0 pid=77) ERROR 10-08 09:19:30 [multiproc_executor.py:671]   File "/usr/lib/python3.12/'
            'site-packages/vllm/v1/worker/gpu_worker.py", line 344, in compile_or_warm_up_model\n')
    first = explain(tmp_path, text)[0]
    assert first.remedy.id == "QD-R-TORCH-TRITON-FP8-ARCH"
    assert first.root.below and first.root.frame.function == "compile_or_warm_up_model"


def test_every_kind_of_mined_template_explains_where_it_was_raised():
    """NCCL's `error-string` templates have no `raise:` / `log:` prefix: a finding located on one is told like
    any other (it was an internal IndexError on real NCCL logs)."""
    from remedies.source import Located
    from remedies.templates import Hit, load_templates

    one_per_kind = {t.kind: t for t in load_templates().templates}
    assert "error-string" in one_per_kind
    for template in one_per_kind.values():
        located = Located(Hit(template, len(template.text), True), ())
        assert template.package in located.why()
        assert located.steps()


@pytest.mark.parametrize("lines, root, component", [
    # an LLVM abort (Triton's compiler) printed between a server's INFO records, then its death notices
    (["INFO 05-31 09:09:41 [engine.py:310] Added request cmpl-1.",
      "LLVM ERROR: Failed to compute parent layout for slice layout.",
      "ERROR 05-31 09:09:48 [client.py:305] RuntimeError('Engine process (pid 65262) died.')",
      "INFO:     Shutting down", "INFO:     Finished server process [64954]"],
     "LLVM ERROR: Failed to compute parent layout", "torch"),
    # Ray's C++ fatal record (spdlog level C) after a failed check
    (["(raylet, ip=10.0.0.2) [2025-12-12 15:10:48,697 C 42791 42791] (raylet) object_provider.cc:153:  An "
      "unexpected system state has occurred. You have likely discovered a bug in Ray. Please report this issue."],
     "You have likely discovered a bug in Ray", "ray"),
    # a traceback tail under loguru's bare `date | ` prefix, its header cut off
    (['2026-04-16 14:23:34.047 |   File "/usr/lib/python3/dist-packages/vllm/transformers_utils/configs/x.py", '
      'line 101, in __init__', "2026-04-16 14:23:34.047 |     validate(self.layer_types, 2)",
      "2026-04-16 14:23:34.047 | TypeError: validate() takes 1 positional argument but 2 were given"],
     "TypeError: validate() takes 1 positional argument", "vllm"),
])
def test_a_native_abort_or_a_prefixed_traceback_tail_is_never_silent(tmp_path, lines, root, component):
    log = tmp_path / "x.log"
    log.write_text("\n".join(lines) + "\n")
    findings = explain_sources([log])
    assert findings, "a failing log must name its root exception"
    first = findings[0]
    assert root in first.why and first.remedy.component == component


CUT_AFTER_PROSE = """\
**Bug**: under load the engine dies with **AssertionError** in `allocate_slots`; the traceback we kept:

```
ERROR 06-23 06:27:21 [core.py:1229] Traceback (most recent call last):
ERROR 06-23 06:27:21 [core.py:1229]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 701, in run_busy_loop
ERROR 06-23 06:27:21 [core.py:1229]     self._process_engine_step()
ERROR 06-23 06:27:21 [core.py:1229]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/sched/scheduler.py", line 412, in schedule
ERROR 06-23 06:27:21 [core.py:1229]     new_blocks = self.kv_cache_manager.allocate_slots(request, num_new_tokens)
```
"""


def test_an_exception_quoted_in_prose_is_placed_below_the_deepest_frame_of_the_cut_traceback_after_it(tmp_path):
    log = tmp_path / "report.md"
    log.write_text(CUT_AFTER_PROSE)
    (finding, *_) = explain_sources([log])
    root = finding.root
    assert root is not None and root.below and root.frame is not None
    assert (root.frame.path.rsplit("/", 1)[-1], root.frame.line, root.frame.function) == ("scheduler.py", 412,
                                                                                          "schedule")
    assert "raised below /usr/local/lib/python3.12/dist-packages/vllm/v1/core/sched/scheduler.py, line 412" in (
        finding.why)


def test_a_whole_traceback_after_prose_keeps_its_own_exception(tmp_path):
    log = tmp_path / "report.md"
    whole = CUT_AFTER_PROSE.rstrip().removesuffix("```") + "ERROR 06-23 06:27:21 [core.py:1229] AssertionError\n```\n"
    log.write_text(whole)
    (finding, *_) = explain_sources([log])
    assert finding.crash is not None and finding.crash.frame is not None
    assert finding.crash.frame.line == 412


def test_an_exception_pasted_above_its_headerless_frames_is_placed_below_the_deepest_engine_frame(tmp_path):
    log = tmp_path / "paste.log"
    log.write_text("[2026-01-10 08:00:00 TP0] IndexError: list index out of range\n"
                   '[2026-01-10 08:00:00 TP0]   File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", '
                   "line 1502, in get_next_batch_to_run\n"
                   "[2026-01-10 08:00:00 TP0]     req = self.waiting_queue[0]\n")
    (finding, *_) = explain_sources([log])
    root = finding.root
    assert root is not None and root.below and root.frame is not None
    assert (root.frame.line, root.frame.function) == (1502, "get_next_batch_to_run")
