"""Each entry names its message in every release's and component's wording, written from the sources:

- vLLM 0.4 - 0.5's LoRA loader (vllm/lora/worker_manager.py _load_lora) opened `<path>/adapter_config.json`
  itself, so an adapter it cannot find is a plain FileNotFoundError on that file;
- transformers 4.44+ (tokenization_utils_base.py get_chat_template): "Cannot use chat template functions because
  tokenizer.chat_template is not set and no template argument was passed!";
- the NATS Python client (nats/js/errors.py ServiceUnavailableError, "nats: ServiceUnavailableError: code=503
  ..."), which Dynamo's Python components print when the server runs without JetStream;
- vLLM's cumem allocator (csrc/cumem_allocator.cpp CUDA_CHECK "CUDA Error: %s at %s:%d") with the file redacted,
  inside an escaped JSON body.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain


def first_id(tmp_path: Path, text: str) -> str | None:
    log = tmp_path / "paste.log"
    log.write_text(text)
    found = explain.explain_sources([log])
    return found[0].remedy.id if found else None


@pytest.mark.parametrize("text, entry", [
    ("ERROR 06-03 10:11:12 engine.py:120] FileNotFoundError: [Errno 2] No such file or directory: "
     "'my-org/qwen-sql-lora/adapter_config.json'\n", "QD-R-VLLM-LORA-NOT-FOUND"),
    ("[2025-01-10 10:00:00] Error: Cannot use chat template functions because tokenizer.chat_template is not set and "
     "no template argument was passed! For information about writing templates and setting the "
     "tokenizer.chat_template attribute, please see the documentation at "
     "https://huggingface.co/docs/transformers/main/en/chat_templating\n", "QD-R-VLLM-NO-CHAT-TEMPLATE"),
    ("nats.js.errors.ServiceUnavailableError: nats: ServiceUnavailableError: code=503 err_code=None "
     "description='None'\n", "QD-R-HOST-DYNAMO-NATS-UNREACHABLE"),
    ('> E1203 10:11:12.123456       1 controller.go:88] "wake up failed" err="POST http://10.0.0.7:8000/wake_up: '
     '500 {\\"error\\":\\"RuntimeError: CUDA Error: out of memory at <redacted>:62\\"}"\n', "QD-R-VLLM-SLEEP-WAKE-OOM"),
])
def test_every_wording_of_a_site_names_its_entry(tmp_path, text, entry):
    assert first_id(tmp_path, text) == entry


@pytest.mark.parametrize("text", [
    "FileNotFoundError: [Errno 2] No such file or directory: '/models/qwen/config.json'\n",
    "ServiceUnavailableError: the upstream answered 503\n",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
])
def test_the_neighbouring_messages_do_not_take_those_entries(tmp_path, text):
    assert first_id(tmp_path, text) not in {"QD-R-VLLM-LORA-NOT-FOUND", "QD-R-HOST-DYNAMO-NATS-UNREACHABLE",
                                            "QD-R-VLLM-SLEEP-WAKE-OOM"}


def test_a_nats_traceback_names_the_client_frame_that_raised(tmp_path):
    log = tmp_path / "router.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/opt/dynamo/components/router/prefill_queue.py", line 41, in ensure_connection\n'
        "    await self.js.add_stream(name=self.stream_name)\n"
        '  File "/usr/local/lib/python3.12/site-packages/nats/js/manager.py", line 450, in _api_request\n'
        "    raise ServiceUnavailableError\n"
        "nats.js.errors.ServiceUnavailableError: nats: ServiceUnavailableError: code=None err_code=None "
        "description='None'\n")
    (finding,) = explain.explain_sources([log])
    assert finding.remedy.id == "QD-R-HOST-DYNAMO-NATS-UNREACHABLE"
    assert finding.root is not None and finding.root.frame is not None and "nats/js" in finding.root.frame.path


def test_nccls_last_error_line_outranks_the_result_code_that_wraps_it(tmp_path):
    log = tmp_path / "helm-issue.md"
    log.write_text(
        "The engine pod fails at init:\n"
        "`torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:3356, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5`\n"
        "`ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.`\n"
        "`Last error:`\n"
        "`Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)`\n")
    assert [f.remedy.id for f in explain.explain_sources([log])] == [
        "QD-R-NCCL-SHM-NO-SPACE", "QD-R-NCCL-SYSTEM-CALL", "QD-R-NCCL-SYSTEM-ERROR"]
