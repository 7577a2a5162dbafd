"""Engine bugs named as such: internal invariants raised in engine code, however the report pastes them.

Inputs are built from the messages' real templates: Python's own wordings of an invariant (cpython
Objects/object.c "'%.100s' object has no attribute '%U'", Objects/abstract.c "is not subscriptable"), torch's
device-side assert (c10/cuda/CUDAException.cpp, CUDA_KERNEL_ASSERT), the CUDA runtime's capture error
(cudaErrorStreamCaptureUnsupported), and vLLM's tool parsers' logger.exception("Error in extracting tool call
from response.").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain
from remedies.crash import Crash, Frame, flattened
from remedies.bugfeatures import features
from remedies.enginebug import crash_bug, crash_verdict, entry_verdict, internal
from remedies.prose import inline_exception

SITE = "/usr/local/lib/python3.12/dist-packages"


def explained(tmp_path: Path, text: str, name: str = "report.log") -> list[explain.Finding]:
    log = tmp_path / name
    log.write_text(text)
    return explain.explain_sources([log])


@pytest.mark.parametrize("exception", [
    "AssertionError",
    "IndexError: list index out of range",
    "KeyError: 'layers.3.mlp'",
    "AttributeError: 'NoneType' object has no attribute 'shape'",
    "TypeError: 'NoneType' object is not subscriptable",
    "RuntimeError: CUDA error: device-side assert triggered",
    "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing",
    "RuntimeError: shape mismatch: value tensor of shape [0, 24, 32] cannot be broadcast to indexing result of shape [2, 24, 32]",
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
])
def test_internal_invariants_are_recognised(exception):
    assert internal(exception)


@pytest.mark.parametrize("exception", [
    "ValueError: max_model_len (70000) is greater than the derived max_model_len (40960)",
    "TypeError: __init__() got an unexpected keyword argument 'task'",
    "AttributeError: 'Qwen3Config' object has no attribute 'rope_scaling'",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
])
def test_user_facing_errors_are_not_internal_invariants(exception):
    assert not internal(exception)


def test_a_prose_report_names_the_engine_bug_with_the_function_and_features(tmp_path):
    (finding,) = explained(tmp_path, (
        "I run vLLM with `vllm serve Qwen/Qwen3.5-35B-A3B --enable-sleep-mode`, sleep at level 1, then call "
        "`/wake_up`.\n"
        "It fails with **`AttributeError: 'NoneType' object has no attribute 'copy_'`** on every worker.\n"))
    assert finding.crash is not None and finding.crash.exception.startswith("AttributeError: 'NoneType'")
    bug = finding.engine_bug
    assert bug is not None and bug.engine == "vllm" and "wake_up" in bug.raised_at
    assert {"sleep mode", "hybrid model (Qwen3.5)"} <= set(bug.features)
    assert "engine bug" in finding.why


def test_ordinary_prose_about_an_error_class_raises_no_alarm(tmp_path):
    assert explained(tmp_path, (
        "vLLM serves fine. The docs say a KeyError is raised when a LoRA name is unknown.\n"
        "INFO 03-01 10:00:00 [api_server.py:1] Application startup complete.\n")) == []


def test_a_prose_exception_on_a_page_naming_no_engine_is_left_alone(tmp_path):
    assert explained(tmp_path, "My script fails with `IndexError: list index out of range` in the loop.\n") == []


def test_a_bare_exception_in_a_fence_after_prose_is_the_engine_bug_of_the_engine_the_prose_names(tmp_path):
    (finding,) = explained(tmp_path, (
        "Launching `python -m sglang.launch_server --model-path Qwen/Qwen3-8B --speculative-algorithm EAGLE3 "
        "--attention-backend triton` starts, then the warmup kills the scheduler:\n\n"
        "```\nTypeError: 'NoneType' object is not subscriptable\n```\n"))
    bug = finding.engine_bug
    assert bug is not None and bug.engine == "sglang"
    assert {"speculative decoding (EAGLE3)", "attention backend (triton)"} <= set(bug.features)
    assert finding.steps[0].text.startswith("Try the newest sglang patch release")


def test_a_flattened_traceback_without_its_header_gives_frames_and_the_bug(tmp_path):
    line = (f'File "{SITE}/vllm/v1/worker/gpu_model_runner.py", line 4010, in capture_model self._capture() '
            f'File "{SITE}/vllm/v1/spec_decode/eagle.py", line 512, in propose n = int(counts.sum().item()) '
            f'File "{SITE}/torch/_tensor.py", line 40, in item return self._item() '
            "RuntimeError: CUDA error: operation not permitted when stream is capturing")
    assert flattened(line)
    (finding,) = explained(tmp_path, line + "\n")
    assert finding.remedy.id == "QD-R-CUDA-STREAM-CAPTURING"
    assert finding.root is not None and finding.root.frame is not None
    assert finding.root.frame.function == "propose"
    assert finding.engine_bug is not None and "eagle.py" in finding.engine_bug.raised_at
    assert finding.steps[0].text.startswith("vLLM - --enforce-eager")  # the entry's steps stay first


def test_one_quoted_frame_in_a_sentence_is_not_a_flattened_traceback():
    assert not flattened('See File "vllm/config.py", line 12, in verify for the check; nothing failed.')


def test_a_device_assert_raised_from_engine_code_is_named_beside_the_entry(tmp_path):
    findings = explained(tmp_path, (
        "(EngineCore_DP0 pid=7) INFO 03-01 10:00:00 [core.py:90] Initializing a V1 LLM engine (v0.16.0) with "
        "config: model='Qwen/Qwen3.5-35B-A3B', speculative_config=SpeculativeConfig(method='mtp')\n"
        "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:111: operator(): block: [0,0,0], thread: [3,0,0] "
        "Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.\n"
        "(EngineCore_DP0 pid=7) ERROR 03-01 14:00:00 [core.py:800] Traceback (most recent call last):\n"
        f'(EngineCore_DP0 pid=7) ERROR 03-01 14:00:00 [core.py:800]   File "{SITE}/vllm/v1/spec_decode/eagle.py", '
        "line 300, in prepare_inputs\n"
        "(EngineCore_DP0 pid=7) ERROR 03-01 14:00:00 [core.py:800]     idx = cu_num_tokens[req_idx]\n"
        "(EngineCore_DP0 pid=7) ERROR 03-01 14:00:00 [core.py:800] RuntimeError: CUDA error: device-side "
        "assert triggered\n"))
    first = findings[0]
    assert first.remedy.id == "QD-R-CUDA-DEVICE-ASSERT"
    assert first.engine_bug is not None and first.engine_bug.release == "0.16.0"
    assert "speculative decoding (mtp)" in first.engine_bug.features
    assert first.steps[0].text.startswith("Check that tokenizer and model")
    assert any("newest vllm patch release" in s.text or "Move to vllm" in s.text or "vllm issue tracker" in s.text
               for s in first.steps)


def test_a_device_assert_without_engine_frames_names_no_bug(tmp_path):
    (finding,) = explained(tmp_path, "RuntimeError: CUDA error: device-side assert triggered\n")
    assert finding.remedy.id == "QD-R-CUDA-DEVICE-ASSERT" and finding.engine_bug is None


def _parser_log(parser: str, model: str) -> str:
    record = "(APIServer pid=1) ERROR 03-01 10:05:00 [qwen3coder_tool_parser.py:334] "
    return (f"vllm serve {model} --enable-auto-tool-choice --tool-call-parser {parser}\n"
            f"{record}Error in extracting tool call from response.\n"
            f"{record}Traceback (most recent call last):\n"
            f'{record}  File "{SITE}/vllm/entrypoints/openai/tool_parsers/qwen3coder_tool_parser.py", line 290, '
            "in _parse_xml_function_call\n"
            f"{record}    name = parts[1]\n"
            f"{record}IndexError: list index out of range\n")


@pytest.mark.parametrize("parser, model", [("qwen3_coder", "Qwen/Qwen3.5-35B-A3B"),
                                           ("qwen3_coder", "Qwen/Qwen3-Coder-30B-A3B-Instruct"),
                                           ("hermes", "Qwen/Qwen3-8B")])
def test_a_parser_crash_with_the_models_own_parser_is_an_engine_bug_first(tmp_path, parser, model):
    first = explained(tmp_path, _parser_log(parser, model))[0]
    assert first.remedy.id == "QD-R-VLLM-TOOL-PARSER-MISMATCH"
    assert first.engine_bug is not None and "_parse_xml_function_call" in first.engine_bug.raised_at
    assert f"tool parser ({parser})" in first.engine_bug.features
    assert not any(step.text.startswith("Use the parser the model card names") for step in first.steps)
    assert "no fix" in first.why


def test_a_parser_crash_with_another_models_parser_keeps_the_mismatch_advice(tmp_path):
    first = explained(tmp_path, _parser_log("hermes", "Qwen/Qwen3.5-35B-A3B"))[0]
    assert first.remedy.id == "QD-R-VLLM-TOOL-PARSER-MISMATCH" and first.engine_bug is None
    assert first.steps[0].text.startswith("Use the parser the model card names")


def test_an_unsupported_combination_refused_deep_in_the_engine_is_a_bug_but_not_at_its_argument_checks():
    deep = Crash(1, "NotImplementedError: torch_native backend is not supported with speculative decoding",
                 "x", Frame(f"{SITE}/sglang/srt/layers/attention/torch_native_backend.py", 80, "forward_extend"),
                 "sglang", "traceback")
    verdict = crash_verdict(deep, ["--speculative-algorithm NGRAM --attention-backend torch_native"])
    assert verdict is not None and "refused before loading" in verdict.bug.why
    assert "attention backend (torch_native)" in verdict.bug.features
    at_start = Crash(1, deep.exception, "x", Frame(f"{SITE}/sglang/srt/server_args.py", 900, "check_server_args"),
                     "sglang", "traceback")
    assert crash_verdict(at_start, []) is None


def test_an_ordinary_entry_reads_no_lines_for_the_verdict():
    def unread() -> list[str]:
        raise AssertionError("read")
    assert entry_verdict("QD-R-NCCL-SYSTEM-ERROR", "x", None, None, unread) is None


def test_features_are_read_once_with_their_values():
    named = features(["--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'",
                      "--kv-cache-dtype fp8_e4m3 --attention-backend FLASHINFER", "built with CUDA 13.0 on Windows"])
    assert named == ("speculative decoding (mtp)", "attention backend (FLASHINFER)", "KV-cache dtype (fp8_e4m3)",
                     "CUDA (13.0)", "platform (Windows)")


def test_an_inline_exception_needs_a_sentence_and_an_invariant():
    assert inline_exception("it fails with `IndexError: list index out of range` at load") == (
        "IndexError: list index out of range")
    assert inline_exception("IndexError: list index out of range") is None
    assert inline_exception("it fails with `KeyError: 'qwen3_5_moe'` at load") is None  # a name lookup, no frame
    assert inline_exception("it fails with `ValueError: bad value here` at load") is None


def test_a_key_error_without_its_frame_is_not_called_an_engine_bug(tmp_path):
    (finding,) = explained(tmp_path, "vllm serve Qwen/Qwen3.5-35B-A3B fails:\n```\nKeyError: 'qwen3_5_moe'\n```\n")
    assert finding.remedy.id == "QD-R-UNKNOWN" and finding.engine_bug is None


def test_a_key_error_raised_in_engine_code_is_an_engine_bug():
    crash = Crash(1, "KeyError: 'layers.3.mlp'", "x", Frame(f"{SITE}/vllm/model_executor/models/utils.py", 90,
                  "load_weights"), "vllm", "traceback")
    assert crash_verdict(crash, []) is not None


def test_a_triton_kernel_assert_in_engine_code_names_the_bug_beside_the_entry(tmp_path):
    first = explained(tmp_path, (
        f"{SITE}/vllm/v1/spec_decode/utils.py:48: prepare_next_token_ids_kernel: block: [0,0,0], thread: [5,0,0] "
        "Assertion `index out of bounds: 0 <= tmp7 < 4` failed.\n"))[0]
    assert first.remedy.id == "QD-R-CUDA-DEVICE-ASSERT"
    assert first.engine_bug is not None and "prepare_next_token_ids_kernel" in first.engine_bug.raised_at


def test_a_torch_kernel_assert_names_no_engine_bug(tmp_path):
    first = explained(tmp_path, (
        "/pytorch/aten/src/ATen/native/cuda/IndexKernelUtils.cu:16: vectorized_gather_kernel: block: [64,0,0], "
        "thread: [224,0,0] Assertion `ind >=0 && ind < ind_dim_size` failed.\n"))[0]
    assert first.remedy.id == "QD-R-CUDA-DEVICE-ASSERT" and first.engine_bug is None


def test_nvcc_refusing_flashinfers_generated_command_is_flashinfers_bug_beside_the_entry(tmp_path):
    first = explained(tmp_path, (
        "FAILED: /srv/svc/.cache/flashinfer/0.6.18/89/cached_ops/sampling/renorm.cuda.o\n"
        "/usr/local/cuda/bin/nvcc --generate-dependencies-with-compile -c /srv/svc/.cache/flashinfer/0.6.18/89/"
        "generated/sampling/renorm.cu -o renorm.cuda.o --compress-mode=size\n"
        "nvcc fatal   : Unknown option '--compress-mode=size'\n"))[0]
    assert first.remedy.id == "QD-R-CUDA-NVCC-REJECTED-COMMAND"
    assert first.steps[0].text.startswith("nvcc does not take --compress-mode=size")
    assert first.engine_bug is not None and first.engine_bug.engine == "flashinfer"


def test_nvcc_refusing_a_users_own_build_names_no_engine_bug(tmp_path):
    first = explained(tmp_path, "make[2]: building kernel.cu\nnvcc fatal   : Unknown option '-fPIC'\n")[0]
    assert first.remedy.id == "QD-R-CUDA-NVCC-REJECTED-COMMAND" and first.engine_bug is None


@pytest.mark.parametrize("exception, path", [
    # sglang/srt/server_args.py ServerArgs._handle_attention_backend_compatibility asserts its start-up checks
    ("AssertionError: Speculative decoding is currently not supported with Flex Attention backend",
     "sglang/srt/server_args.py"),
    # sglang/srt/model_executor/model_runner.py ModelRunner.init_attention_backend asks for another backend
    ("AssertionError: Window attention is not supported in the triton attention backend. Please use "
     "`--attention-backend flashinfer`.", "sglang/srt/model_executor/model_runner.py"),
])
def test_an_assertion_that_refuses_a_setting_is_not_an_engine_bug(exception, path):
    crash = Crash(1, exception, exception, Frame(f"{SITE}/{path}", 10, "f"), "sglang", "traceback")
    assert crash_bug(crash, ["python -m sglang.launch_server"]) is None


def test_a_bare_assertion_in_the_scheduler_is_an_engine_bug():
    crash = Crash(1, "AssertionError", "AssertionError", Frame(f"{SITE}/sglang/srt/managers/scheduler.py", 10,
                  "process_batch_result"), "sglang", "traceback")
    assert crash_bug(crash, []) is not None


def test_a_conda_envs_directory_is_not_the_engines_start_up_checks():
    crash = Crash(1, "AssertionError", "AssertionError", Frame(
        "/opt/miniconda3/envs/serve/lib/python3.9/site-packages/vllm/engine/async_llm_engine.py", 939,
        "run_engine_loop"), "vllm", "traceback")
    assert crash_bug(crash, []) is not None


@pytest.mark.parametrize("header", ["Traceback (most recent call last): ", ""])
def test_a_flattened_traceback_ending_in_a_bare_assert_is_the_engines_bug(tmp_path, header):
    line = (f'{header}File "{SITE}/sglang/srt/managers/scheduler.py", line 2400, in event_loop_overlap '
            "self.process_batch_result(batch, result) "
            f'File "{SITE}/sglang/srt/managers/scheduler_output_processor_mixin.py", line 230, in '
            "process_batch_result_decode assert len(batch.reqs) == len(next_token_ids) AssertionError")
    (finding,) = explained(tmp_path, line + "\n")
    assert finding.crash is not None and finding.crash.exception == "AssertionError"
    assert finding.engine_bug is not None and "process_batch_result_decode" in finding.engine_bug.raised_at


@pytest.mark.parametrize("started", [
    "(APIServer pid=1) INFO 03-01 10:00:00 [utils.py:233] non-default args: {'model_tag': 'Qwen/Qwen3.5-35B-A3B', "
    "'enable_auto_tool_choice': True, 'tool_call_parser': 'qwen3_coder', 'model': 'Qwen/Qwen3.5-35B-A3B'}",
    "INFO 03-01 10:00:00 api_server.py:712] args: Namespace(host=None, port=8000, enable_auto_tool_choice=True, "
    "tool_call_parser='qwen3_coder', model='Qwen/Qwen3.5-35B-A3B', tokenizer=None)",
])
def test_the_parser_and_model_read_from_the_engines_printed_arguments_make_the_crash_a_bug(tmp_path, started):
    log = started + "\n" + _parser_log("qwen3_coder", "Qwen/Qwen3.5-35B-A3B").split("\n", 1)[1]
    first = explained(tmp_path, log)[0]
    assert first.remedy.id == "QD-R-VLLM-TOOL-PARSER-MISMATCH" and first.engine_bug is not None
    assert "no fix" in first.why


@pytest.mark.parametrize("parser, model", [("hermes", "NousResearch/Hermes-3-Llama-3.1-8B"),
                                           ("llama3_json", "meta-llama/Llama-3.1-8B-Instruct"),
                                           ("mistral", "mistralai/Mistral-7B-Instruct-v0.3")])
def test_other_families_documented_parser_makes_a_parser_crash_an_engine_bug(tmp_path, parser, model):
    first = explained(tmp_path, _parser_log(parser, model))[0]
    assert first.remedy.id == "QD-R-VLLM-TOOL-PARSER-MISMATCH" and first.engine_bug is not None


def test_a_llama_served_with_the_hermes_parser_keeps_the_mismatch_advice(tmp_path):
    first = explained(tmp_path, _parser_log("hermes", "meta-llama/Llama-3.1-8B-Instruct"))[0]
    assert first.remedy.id == "QD-R-VLLM-TOOL-PARSER-MISMATCH" and first.engine_bug is None
