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
    "/opt/nvshmem/src/host/init/init.cu:1111: non-zero status: 7 nvshmem transport init failed \n"
    "/opt/nvshmem/src/host/init/init.cu:1287: non-zero status: 7 nvshmem common in",
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


NIXL_RECORD = ("(EngineCore_DP0 pid=77) ERROR 03-01 10:00:00 [base_worker.py:1260] NIXL transfer failure: "
               "handshake_failed | Context: {'failure_type': 'handshake_failed', 'request_id': 'cmpl-9f', "
               "'engine_id': 'b1', 'remote_engine_id': 'a7'}")
SGLANG_RECORD = ("[2026-03-01 10:00:00 TP0] Decode handshake failed for request rank=0 decode_req.req.rid='a1' "
                 "decode_req.req.bootstrap_room=99")


@pytest.mark.parametrize("said", [
    "Prefill runs with TP=4 on node A, decode with TP=2 on node B.",
    "decode tp_size 8, prefill tp_size 4",
    "Heterogeneous TP between prefill and decode.",
])
@pytest.mark.parametrize("record, entry", [(NIXL_RECORD, "QD-R-VLLM-PD-TP-MISMATCH"),
                                           (SGLANG_RECORD, "QD-R-SGLANG-PD-TP-MISMATCH")])
def test_a_failed_pd_handshake_after_a_report_of_different_tp_sizes_is_the_tp_mismatch(tmp_path, said, record, entry):
    found = explain_paste(tmp_path, f"{said}\n\n```\n{record}\n```\n")
    assert found[0].remedy.id == entry


@pytest.mark.parametrize("record", [NIXL_RECORD, SGLANG_RECORD])
def test_a_failed_pd_handshake_with_equal_tp_sizes_is_no_tp_mismatch(tmp_path, record):
    found = explain_paste(tmp_path, f"Prefill and decode both use TP=4; prefill TP 4, decode TP 4.\n\n{record}\n")
    assert all("TP-MISMATCH" not in f.remedy.id for f in found)


@pytest.mark.parametrize("paste", [
    "ValueError: Embedding API is not supported by this model. Try converting the model using `--convert embed`.",
    '{"object":"error","message":"This model does not appear to be an embedding model by default. Please add '
    '`--is-embedding` when launching the server or try another model.","type":"BadRequestError","code":400}',
])
def test_a_pooling_request_refused_in_the_offline_api_or_by_sglang_names_the_pooling_entry(tmp_path, paste):
    assert explain_paste(tmp_path, paste + "\n")[0].remedy.id == "QD-R-VLLM-POOLING-ON-CAUSAL-LM"


ERROR_REPLY = ('Response: {"object":"error","message":"temperature must be non-negative, got -1.0.",'
               '"type":"BadRequestError","param":null,"code":400}\n')
CLIENT_VALIDATION = ('Traceback (most recent call last):\n  File "/app/agent.py", line 40, in call\n'
                     '    return ChatCompletion.model_validate(resp.json())\n'
                     'pydantic_core._pydantic_core.ValidationError: 2 validation errors for ChatCompletion\nid\n'
                     "  Field required [type=missing, input_value={'object': 'error', 'mess...code': 400}, "
                     "input_type=dict]\n")


def test_a_clients_schema_validation_of_an_error_reply_is_rooted_in_the_replys_message(tmp_path):
    found = explain_paste(tmp_path, ERROR_REPLY + CLIENT_VALIDATION)
    assert found[0].crash is not None
    assert found[0].crash.exception == "BadRequestError: temperature must be non-negative, got -1.0."


def test_a_schema_validation_of_a_success_reply_keeps_its_own_root(tmp_path):
    found = explain_paste(tmp_path, ERROR_REPLY + CLIENT_VALIDATION.replace(
        "{'object': 'error', 'mess...code': 400}", "{'id': 'x', 'object': 'chat.completion'}"))
    assert "validation errors for ChatCompletion" in found[0].crash.exception
