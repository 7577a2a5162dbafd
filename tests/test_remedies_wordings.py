"""Every wording a cause has across the releases and platforms of the component that prints it names one entry.

Each case is a message rendered from its source template (the source is named beside it): an older or newer
release's text, the same errno printed by number or by name, Linux's or macOS's strerror, another program
name for the same argparse parser, the other side of a connection. The entry is named first whatever the
wording; the near misses at the end (a different errno, a different cause) do not borrow it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain_sources

TYPE_LIST = ", ".join(["albert", "align", "altclip", "audio-spectrogram-transformer", "autoformer", "bark", "bart",
                       "beit", "bert", "bert-generation", "big_bird", "bigbird_pegasus", "biogpt", "bit", "blenderbot",
                       "bloom", "camembert", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe"])

WORDINGS = [
    # transformers configuration_auto.py AutoConfig.from_pretrained, 4.x: the type list of the installed release
    ("transformers 4.x unknown model, raised",
     f"ValueError: Unrecognized model in /models/Qwen3.5-35B-A3B. Should have a `model_type` key in its "
     f"config.json, or contain one of the following strings in its name: {TYPE_LIST}\n",
     "QD-R-HF-UNKNOWN-MODEL-TYPE"),
    ("transformers 4.x unknown model, shown by a UI without the class and wrapped mid-word",
     f"Failed to load model.\nUnrecognized model in Qwen/Qwen3.5-35B-A3B. Should have a `model_type` key in its "
     f"config.json, or contain one of the following strings in its name: {TYPE_LIST[:60]}\n{TYPE_LIST[60:]}\n",
     "QD-R-HF-UNKNOWN-MODEL-TYPE"),
    # moby daemon/errors.go incompatibleDeviceRequest: %q of the driver; a rendered paste drops the empty ""
    ("docker device driver, quoted", 'docker: Error response from daemon: could not select device driver "" with '
     "capabilities: [[gpu]].\n", "QD-R-CUDA-CONTAINER-NO-GPU-RUNTIME"),
    ("docker device driver, quotes lost", "docker: Error response from daemon: could not select device driver  "
     "with capabilities: [[gpu]].\n", "QD-R-CUDA-CONTAINER-NO-GPU-RUNTIME"),
    # torch c10d socket.cpp: "(errno: {} - {})", Linux 98 / macOS 48, before the libuv store's named fields
    ("c10d bind in use, numeric errno (Linux)",
     "RuntimeError: The server socket has failed to listen on any local network address. The server socket has "
     "failed to bind to [::]:29500 (errno: 98 - Address already in use). The server socket has failed to bind to "
     "0.0.0.0:29500 (errno: 98 - Address already in use).\n", "QD-R-TORCH-STORE-EADDRINUSE"),
    ("c10d bind in use, numeric errno (macOS)",
     "[W socket.cpp:697] [c10d] The server socket has failed to bind to 0.0.0.0:29500 (errno: 48 - Address "
     "already in use).\n", "QD-R-TORCH-STORE-EADDRINUSE"),
    ("c10d bind in use, libuv fields", "[W socket.cpp:464] [c10d] The server socket has failed to bind to "
     "[::]:29500 (errno: 98 - Address already in use). port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, "
     "message: address already in use\n", "QD-R-TORCH-STORE-EADDRINUSE"),
    # torch c10d and asyncio create_server: EACCES on a privileged port, EADDRNOTAVAIL on a foreign address
    ("c10d bind on a privileged port",
     "RuntimeError: The server socket has failed to listen on any local network address. The server socket has "
     "failed to bind to [::]:443 (errno: 13 - Permission denied).\n", "QD-R-HOST-BIND-PRIVILEGED-PORT"),
    ("uvicorn bind on a privileged port", "ERROR:    [Errno 13] error while attempting to bind on address "
     "('0.0.0.0', 80): permission denied\n", "QD-R-HOST-BIND-PRIVILEGED-PORT"),
    ("uvicorn bind on the IPv6 loopback without IPv6", "INFO:     Started server process [1]\nINFO:     Waiting "
     "for application startup.\nERROR:    [Errno 99] error while attempting to bind on address ('::1', 8000, 0, "
     "0): cannot assign requested address\n", "QD-R-HOST-BIND-ADDRESS-NOT-LOCAL"),
    ("uvicorn bind on a foreign address (macOS)", "ERROR:    [Errno 49] error while attempting to bind on address "
     "('10.1.2.3', 8000): can't assign requested address\n", "QD-R-HOST-BIND-ADDRESS-NOT-LOCAL"),
    ("c10d bind on a foreign address", "[W socket.cpp:697] [c10d] The server socket has failed to bind to "
     "10.0.0.7:29500 (errno: 99 - Cannot assign requested address).\n", "QD-R-HOST-BIND-ADDRESS-NOT-LOCAL"),
    # Triton third_party/nvidia/backend/driver.c gpuAssert: "Triton Error [CUDA]: " + cuGetErrorString
    ("Triton runtime out of memory in the autotuner",
     '  File "/usr/local/lib/python3.12/site-packages/triton/runtime/autotuner.py", line 160, in _bench\n'
     "    return self.do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8))\n"
     "RuntimeError: Triton Error [CUDA]: out of memory\n", "QD-R-CUDA-DEVICE-OOM"),
    # vLLM worker.py raise_if_cache_size_invalid, quoted by reference pages with the figures left out
    ("V0 max seq len without figures", "ValueError: The model's max seq len is larger than the maximum number of "
     "tokens that can be stored in KV cache. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
     "when initializing the engine.\n", "QD-R-VLLM-KV-V0-MAX-SEQ"),
    ("V0 max seq len with figures", "ValueError: The model's max seq len (32768) is larger than the maximum number "
     "of tokens that can be stored in KV cache (17328). Try increasing `gpu_memory_utilization` or decreasing "
     "`max_model_len` when initializing the engine.\n", "QD-R-VLLM-KV-V0-MAX-SEQ"),
    # SGLang prefill.py: the transfer failure seen from the prefill server
    ("PD transfer failed, prefill side", "[2025-08-02 10:11:12 TP0] Prefill transfer failed for request rank=0 "
     "req.rid='4d1f0e' req.bootstrap_room=881726354 with exception KVTransferError(bootstrap_room=881726354): "
     "Failed to send kv chunk of 881726354 to 10.0.0.6:17012\n", "QD-R-SGLANG-PD-TRANSFER-FAILED"),
    # vLLM multimodal processing.py _to_mm_items (0.7 - 0.8): the limit printed as JSON
    ("multimodal limit, 0.7-0.8 wording", "ValueError: You set or defaulted to '{\"image\": 1}' in "
     "`--limit-mm-per-prompt`, but passed 96 image items in the same prompt.\n", "QD-R-VLLM-MM-LIMIT"),
    # argparse prog: launch_server.py (python -m), sglang (console script), sglang serve (named parser)
    ("sglang console script, invalid choice", "usage: sglang [-h] ...\nsglang: error: argument --tool-call-parser: "
     "invalid choice: 'qwen3' (choose from 'deepseekv3', 'qwen25', 'qwen3_coder')\n", "QD-R-SGLANG-LAUNCH-ARG"),
    ("sglang serve, unrecognized argument", "sglang serve: error: unrecognized arguments: --enable-reasoning\n",
     "QD-R-SGLANG-LAUNCH-ARG"),
    ("python -m sglang.launch_server, invalid choice", "launch_server.py: error: argument --reasoning-parser: "
     "invalid choice: 'qwen35' (choose from 'deepseek-r1', 'qwen3')\n", "QD-R-SGLANG-LAUNCH-ARG"),
    ("vllm serve, invalid choice", "vllm serve: error: argument --tool-call-parser: invalid choice: 'qwen3' "
     "(choose from 'hermes', 'qwen3_coder')\n", "QD-R-VLLM-PARSER-UNKNOWN"),
    # urllib3 connectionpool ProtocolError("Connection aborted.", err) re-raised by requests
    ("requests connection dropped mid-request",
     "[rank0]: Traceback (most recent call last):\n[rank0]:   File \"/opt/trl/trl/extras/vllm_client.py\", line "
     "251, in generate\n[rank0]:     response = self.session.post(url, json=payload)\n[rank0]: "
     "requests.exceptions.ConnectionError: ('Connection aborted.', RemoteDisconnected('Remote end closed "
     "connection without response'))\n", "QD-R-VLLM-WRAPPER-UNREACHABLE"),
    ("requests connection reset", "requests.exceptions.ConnectionError: ('Connection aborted.', "
     "ConnectionResetError(104, 'Connection reset by peer'))\n", "QD-R-VLLM-WRAPPER-UNREACHABLE"),
    # transformers tokenization_utils_fast.py, older and newer release
    ("fast tokenizer conversion, sentencepiece", "ValueError: Couldn't instantiate the backend tokenizer from one "
     "of: \n(1) a `tokenizers` library serialization file, \n(2) a slow tokenizer instance to convert or \n(3) an "
     "equivalent slow tokenizer class to instantiate and convert. \nYou need to have sentencepiece installed to "
     "convert a slow tokenizer to a fast one.\n", "QD-R-HF-SENTENCEPIECE-MISSING"),
    ("fast tokenizer conversion, sentencepiece or tiktoken", "ValueError: Couldn't instantiate the backend "
     "tokenizer from one of: (1) a `tokenizers` library serialization file, (2) a slow tokenizer instance to "
     "convert or (3) an equivalent slow tokenizer class to instantiate and convert. You need to have sentencepiece "
     "or tiktoken installed to convert a slow tokenizer to a fast one.\n", "QD-R-HF-SENTENCEPIECE-MISSING"),
    # FlashInfer norm.cu "<Op> failed with error code" as compiled into sgl-kernel
    ("sgl-kernel op without a kernel for a pre-Ampere GPU",
     "[2026-05-03 10:00:01] Compute capability below sm80. Use float16 due to lack of bfloat16 support.\n"
     '  File "/usr/local/lib/python3.12/dist-packages/sgl_kernel/elementwise.py", line 83, in gemma_rmsnorm\n'
     "    torch.ops.sgl_kernel.gemma_rmsnorm.default(out, input, weight, eps, enable_pdl)\n"
     "RuntimeError: GemmaRMSNorm failed with error code no kernel image is available for execution on the "
     "device\n", "QD-R-SGLANG-KERNEL-ARCH-UNSUPPORTED"),
    # nvcc's front end summary of a FlashInfer JIT compile, with no ninja summary after it
    ("FlashInfer JIT compile errors without the ninja summary",
     '/data/cache/flashinfer/0.2.14/75/generated/sampling/sampling.cu(41): error: identifier "__hmax" is '
     'undefined\n2 errors detected in the compilation of "/data/cache/flashinfer/0.2.14/75/generated/sampling/'
     'sampling.cu".\n', "QD-R-CUDA-FLASHINFER-JIT-BUILD"),
    # vLLM get_hf_config's type check, the two halves on two Markdown lines
    ("bundled config class replaced by transformers' own",
     "**Error:**\nExpected type: <class 'vllm.transformers_utils.configs.qwen3_5_moe.Qwen3_5MoeConfig'>\n"
     "but found type: <class 'transformers.models.qwen3_5_moe.configuration_qwen3_5_moe.Qwen3_5MoeConfig'>\n",
     "QD-R-VLLM-DEPENDENCY-VERSION"),
    # bash's notice of a SIGKILL ending a weight load: the OOM killer's doing without the kernel's line
    ("shell Killed during the weight load",
     "INFO 03-02 10:11:12 [gpu_model_runner.py:1890] Starting to load model Qwen/Qwen3.5-35B-A3B...\n"
     "Loading safetensors checkpoint shards:  40% Completed | 6/15 [00:31<00:47,  5.2s/it]\nKilled\n",
     "QD-R-HOST-OOM-KILLER"),
    ("script's Killed during the weight load",
     "Loading safetensors checkpoint shards:  40% Completed | 6/15 [00:31<00:47,  5.2s/it]\n./serve.sh: line 7: "
     "31337 Killed                  vllm serve Qwen/Qwen3.5-35B-A3B --tensor-parallel-size 2\n",
     "QD-R-HOST-OOM-KILLER"),
    # kube-scheduler FitError as kubectl describe prints the event
    ("Kubernetes FailedScheduling",
     "Events:\n  Type     Reason            Age   From               Message\n  ----     ------            ----  "
     "----               -------\n  Warning  FailedScheduling  2m    default-scheduler  0/3 nodes are available: "
     "1 node(s) were unschedulable, 2 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 "
     "Preemption is not helpful for scheduling.\n", "QD-R-HOST-K8S-FAILED-SCHEDULING"),
    # Dynamo lib/runtime transports: etcd connector context, NATS connect, through Python and a Rust panic
    ("Dynamo etcd from Python", "Traceback (most recent call last):\n  File \"/opt/dynamo/components/main.py\", "
     "line 40, in worker\n    runtime = DistributedRuntime(loop, False)\nException: Unable to connect to etcd "
     "server at http://localhost:2379. Check etcd server status\n", "QD-R-HOST-DYNAMO-ETCD-UNREACHABLE"),
    ("Dynamo etcd from a Rust panic after a JSON log line",
     '{"time":"2025-06-01T10:00:00.000Z","level":"INFO","target":"dynamo_runtime","message":"starting"}\n'
     "thread 'main' panicked at lib/llm/src/main.rs:12:5:\ncalled `Result::unwrap()` on an `Err` value: Unable "
     "to connect to etcd server at http://etcd:2379. Check etcd server status\n\nCaused by:\n    0: transport "
     "error\n", "QD-R-HOST-DYNAMO-ETCD-UNREACHABLE"),
    ("Dynamo NATS", "Exception: Failed to connect to NATS: IO error: Connection refused (os error 111)\n",
     "QD-R-HOST-DYNAMO-NATS-UNREACHABLE"),
]

NEAR_MISSES = [
    # the port is taken, not privileged or foreign: the in-use entries keep it
    ("uvicorn port in use", "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): "
     "address already in use\n", "QD-R-VLLM-PORT-IN-USE"),
    # transformers 5.x: the config has no model_type key; the same AutoConfig.from_pretrained raise as 4.x's
    # "Unrecognized model in" (mined with its site), whose entry says to check the folder's config.json first
    ("transformers 5.x config without model_type", "ValueError: Unrecognized model in ./adapter. Should have a "
     "`model_type` key in its config.json.\n", "QD-R-HF-UNKNOWN-MODEL-TYPE"),
    # a plain CUDA launch without a kernel image stays the generic build entry
    ("torch kernel without an image", "RuntimeError: CUDA error: no kernel image is available for execution on "
     "the device\n", "QD-R-CUDA-NO-KERNEL-IMAGE"),
    # the same wrapper on a GPU the library supports in newer builds (Blackwell) is the build's missing arch
    ("sgl-kernel op on a Blackwell GPU", "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with "
     "the current PyTorch installation.\nRuntimeError: RMSNorm failed with error code no kernel image is available "
     "for execution on the device\n", "QD-R-CUDA-NO-KERNEL-IMAGE"),
    # a bare "Killed" with no weight load before it says nothing of memory
    ("shell Killed after serving", "INFO 03-02 10:11:12 [api_server.py:100] vLLM API server version 0.17.0\n"
     "Killed\n", None),
    # a cluster with room: the scheduler prints no FitError
    ("scheduled pod", "  Normal  Scheduled  10s  default-scheduler  Successfully assigned llm/vllm-0 to gpu-node-1\n",
     None),
]


def first_named(tmp_path: Path, text: str) -> str | None:
    log = tmp_path / "pasted.log"
    log.write_text(text, encoding="utf-8")
    found = explain_sources([log])
    return found[0].remedy.id if found else None


@pytest.mark.parametrize(("text", "expect"), [c[1:] for c in WORDINGS], ids=[c[0] for c in WORDINGS])
def test_every_wording_of_a_cause_names_its_entry_first(tmp_path, text, expect):
    assert first_named(tmp_path, text) == expect


@pytest.mark.parametrize(("text", "expect"), [c[1:] for c in NEAR_MISSES], ids=[c[0] for c in NEAR_MISSES])
def test_a_neighbouring_message_does_not_borrow_the_entry(tmp_path, text, expect):
    named = first_named(tmp_path, text)
    # a bare kill's mark names the kill entry (issue 21, remedies/silentdeath.py), no entry of the neighbourhood
    assert named == expect or (expect is None and named in (None, "QD-R-UNKNOWN", "QD-R-HOST-PROCESS-KILLED"))


def test_the_scheduler_event_fills_the_fix_with_the_resource_no_node_has(tmp_path):
    log = tmp_path / "events.txt"
    log.write_text("Warning  FailedScheduling  2m  default-scheduler  0/3 nodes are available: 1 node(s) were "
                   "unschedulable, 2 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available.\n")
    steps = [step.text for finding in explain_sources([log]) for step in finding.steps]
    assert steps[0].startswith("No node has the nvidia.com/gpu the pod asks for")
