"""Messages the catalogue knows by their stable core, wherever a client, a wrapper or a library prints them: a chat
template's own refusal (raise_exception) as an HTTP 400 body, and NVSHMEM's transport-init failure (issue 21)."""

from __future__ import annotations

import pytest

from tests.pastes import explain_paste

CHAT_TEMPLATE = "QD-R-HF-CHAT-TEMPLATE-REFUSED"
NVSHMEM = "QD-R-NCCL-NVSHMEM-TRANSPORT-INIT"


@pytest.mark.parametrize("paste", [
    "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': 'System message must be at the "
    "beginning.', 'type': 'BadRequestError', 'param': None, 'code': 400}",
    '{"object":"error","message":"Conversation roles must alternate user/assistant/user/assistant/...",'
    '"type":"BadRequestError","param":null,"code":400}',
    "litellm.BadRequestError: OpenAIException - Error code: 400 - {'error': {'message': 'No user query found in "
    "messages.', 'type': 'BadRequestError', 'code': 400}}",
    "ERROR 03-01 10:00:00 [serving_chat.py:222] Error in preprocessing prompt inputs: After the optional system "
    "message, conversation roles must alternate user and assistant roles except for tool calls and results.",
])
def test_a_chat_templates_refusal_names_the_entry_without_its_exception_class(tmp_path, paste):
    found = explain_paste(tmp_path, paste + "\n")
    assert found and found[0].remedy.id == CHAT_TEMPLATE


def test_the_templates_rule_is_carried_into_the_fix(tmp_path):
    found = explain_paste(tmp_path, '{"error":{"message":"System role not supported","code":400}}\n')
    assert found[0].remedy.id == CHAT_TEMPLATE
    assert "System role not supported" in found[0].steps[0].text


def test_a_chat_template_printed_at_start_up_is_no_refusal(tmp_path):
    template = ("INFO 03-01 10:00:00 [api_server.py:1] Using supplied chat template: {%- if not loop.first %}"
                "{{- raise_exception('System message must be at the beginning.') }}{%- endif %}"
                "{{- raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n"
                "INFO 03-01 10:00:05 [launcher.py:1] Application startup complete.\n")
    assert [f.remedy.id for f in explain_paste(tmp_path, template)] == []


@pytest.mark.parametrize("paste", [
    "/build/nvshmem/src/modules/transport/ibgda/ibgda.cpp:nvshmemt_init:3706: neither nv_peer_mem, or "
    "nvidia_peermem detected. Skipping transport.\n/build/nvshmem/src/host/transport/transport.cpp:"
    "nvshmemi_transport_init:282: init failed for tran",
    "src/host/transport/transport.cpp:nvshmemi_transport_init:282: init failed for transport: IBGDA\n"
    "src/include/host/nvshmemx_api.h:64: non-zero status: 7: No such file or directory, exiting... aborting due to "
    "error in nvshmemi_init_thread",
    "[TP3] /opt/nvshmem/src/host/topo/topo.cpp:488: [GPU 3] Peer GPU 6 is not accessible, exiting ... ",
])
def test_nvshmem_transport_init_names_the_peer_memory_path(tmp_path, paste):
    found = explain_paste(tmp_path, paste + "\n")
    assert found and found[0].remedy.id == NVSHMEM
    assert any("nvidia_peermem" in step.text for step in found[0].steps)


VALIDATION = ("pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig\n"
              "  Value error, {message} [type=value_error, input_value=ArgsKwargs((), {{'model_config': ...}}), "
              "input_type=ArgsKwargs]\n"
              "    For further information visit https://errors.pydantic.dev/2.11/v/value_error\n")
FRAMES = ('Traceback (most recent call last):\n'
          '  File "/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", line 1500, in create_engine_config\n'
          '    config = VllmConfig(\n'
          '  File "/usr/local/lib/python3.12/dist-packages/pydantic/_internal/_dataclasses.py", line 123, in __init__\n'
          '    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)\n')


@pytest.mark.parametrize("prefix", ["", FRAMES])
def test_a_pydantic_validation_error_carries_its_first_errors_text_as_the_root(tmp_path, prefix):
    message = "The frobnicator backend requires --enable-frobs to be set"
    found = explain_paste(tmp_path, prefix + VALIDATION.format(message=message))
    assert found[0].crash is not None
    assert found[0].crash.exception.endswith(f"1 validation error for VllmConfig Value error, {message}")


@pytest.mark.parametrize("message", [
    "Reasoning parser 'qwen3_5' not found. Available parsers: deepseek_r1, qwen3",
    "invalid reasoning parser: qwen3_5 (chose from { deepseek_r1, qwen3 })",
])
def test_an_unknown_parser_refused_by_config_validation_names_the_parser_entry(tmp_path, message):
    found = explain_paste(tmp_path, "(APIServer pid=1) " + VALIDATION.format(message=message).replace(
        "\n  ", "\n(APIServer pid=1)   "))
    assert found[0].remedy.id == "QD-R-VLLM-PARSER-UNKNOWN"
