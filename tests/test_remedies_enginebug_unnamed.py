"""An engine bug is named as one even when the page never writes the engine's name: the root exception's own
frames (the engine called the library that raised) or the engine's record prefixes (vLLM's "(EngineCore_DP0
pid=…)" process prefix from its decorate_logs, SGLang's "[date time TP0]" from configure_logger) tell the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain_sources

SITE = "/usr/local/lib/python3.12/dist-packages"


def bug_engine(tmp_path: Path, text: str) -> str | None:
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    found = explain_sources([log])
    bug = found[0].engine_bug if found else None
    return bug.engine if bug else None


def test_a_none_the_engine_handed_a_torch_module_is_the_engines_bug(tmp_path):
    text = ("Traceback (most recent call last):\n"
            '  File "/sgl-workspace/python/sglang/srt/speculative/ngram_worker.py", line 210, in forward_batch\n'
            "    out = self.model(hidden)\n"
            f'  File "{SITE}/torch/nn/modules/module.py", line 1773, in _wrapped_call_impl\n'
            "    return self._call_impl(*args, **kwargs)\n"
            "TypeError: 'NoneType' object is not callable\n")
    assert bug_engine(tmp_path, text) == "sglang"


def test_a_frameless_none_under_sglangs_rank_prefixed_records_is_sglangs_bug(tmp_path):
    text = ("[2026-01-10 08:00:01 DP0 TP0] Load weight end. type=Qwen3MoeForCausalLM, avail mem=31.2 GB\n"
            "With the ngram drafter and this attention backend the warmup dies:\n"
            "`AttributeError: 'NoneType' object has no attribute 'init_forward_metadata'`\n")
    assert bug_engine(tmp_path, text) == "sglang"


def test_a_frameless_assertion_under_vllms_process_prefix_is_vllms_bug(tmp_path):
    text = ("(EngineCore_DP0 pid=4121) Model loading took 17.2 GiB and 31.0 seconds\n"
            "After two hours of traffic:\n"
            "AssertionError: num_tokens 8193 exceeds the input buffer\n")
    assert bug_engine(tmp_path, text) == "vllm"


def test_a_registry_key_error_in_a_library_the_engine_called_is_not_named_a_bug(tmp_path):
    text = ("Traceback (most recent call last):\n"
            f'  File "{SITE}/vllm/transformers_utils/config.py", line 600, in get_config\n'
            "    config = AutoConfig.from_pretrained(model)\n"
            f'  File "{SITE}/transformers/models/auto/configuration_auto.py", line 1060, in from_pretrained\n'
            "    config_class = CONFIG_MAPPING[config_dict['model_type']]\n"
            "KeyError: 'qwen3_5_moe'\n")
    assert bug_engine(tmp_path, text) is None


def test_a_frameless_none_on_a_page_of_no_engine_names_no_bug(tmp_path):
    text = "[2026-01-10 08:00:01] starting\n`AttributeError: 'NoneType' object has no attribute 'init_forward_metadata'`\n"
    assert bug_engine(tmp_path, text) is None


@pytest.mark.parametrize("exception", [
    "TypeError: unsupported operand type(s) for *: 'NoneType' and 'int'",
    "TypeError: cannot unpack non-iterable NoneType object",
    "TypeError: object of type 'NoneType' has no len()",
    "TypeError: argument of type 'NoneType' is not iterable",
])
def test_pythons_other_wordings_of_an_unexpected_none_in_engine_code_are_bugs(tmp_path, exception):
    text = ("Traceback (most recent call last):\n"
            f'  File "{SITE}/sglang/srt/model_executor/model_runner.py", line 2100, in forward\n'
            "    return self._forward_raw(forward_batch)\n"
            f"{exception}\n")
    assert bug_engine(tmp_path, text) == "sglang"


def test_a_builtin_list_where_the_engine_expected_a_tensor_quoted_in_prose_is_a_bug(tmp_path):
    text = ("After sleep mode level 1, calling /wake_up on a hybrid model with vLLM fails with "
            "**`AttributeError: 'list' object has no attribute 'zero_'`** on every worker.\n")
    assert bug_engine(tmp_path, text) == "vllm"


def test_a_host_copy_inside_the_engines_graph_capture_is_named_with_the_capture_entry_and_as_a_bug(tmp_path):
    text = ('Traceback (most recent call last): File "/app/vllm/v1/worker/gpu_model_runner.py", line 3900, in '
            'capture_model File "/app/vllm/v1/attention/backends/turboquant_attn.py", line 412, in build '
            "seq_lens = common.seq_lens.tolist() RuntimeError: Cannot copy between CPU and CUDA tensors during CUDA "
            "graph capture unless the CPU tensor is pinned.\n")
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    first = explain_sources([log])[0]
    assert first.remedy.id == "QD-R-CUDA-STREAM-CAPTURING"
    assert first.engine_bug is not None and first.engine_bug.engine == "vllm"
