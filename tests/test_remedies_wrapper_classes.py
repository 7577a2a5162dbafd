"""What a framework or serving wrapper around the engine did is named as the wrapper's, not the engine's or the
network's.

- verl's own vLLM executor (verl/workers/rollout/vllm_rollout/vllm_async_server.py, verl 0.4.0 - 0.5.x) asserts
  that it found DP x TP rollout actors; finding none is a verl <-> vLLM version mismatch, not an engine bug, in
  every shape the assert is pasted (its source line above, in prose, in a fence, under vLLM's frames).
- KServe's Hugging Face runtime (python/huggingfaceserver/huggingfaceserver/__main__.py) looks a --model_id up on
  the Hub even with the model mounted: a Hub error raised under its frames names the runtime's lookup first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain

MISMATCH = "QD-R-VLLM-INTEGRATION-MISMATCH"
ASSERTS = [
    "AssertionError: instance_id: 6d2b3e0a-1c2f-4e1b-9f0e-7d2c3b4a5e6f:Xq1Zr9:1:0 has 0 actors, but vllm_dp_size: 1 "
    "* vllm_tp_size: 2 = 2 is expected.",
    "AssertionError: instance_id: verl_ns:a1B2c3:4:3 has 0 actors, but vllm_dp_size: 4 * vllm_tp_size: 1 = 4 is "
    "expected.",
    "AssertionError: instance_id: ns:wg:2:1 has 3 actors, but vllm_dp_size: 2 * vllm_tp_size: 4 = 8 is expected.",
]
SHAPES = {
    "source_line": "Following the README I ran the GRPO example:\n"
                   "    assert len(actor_names) == vllm_dp_size * vllm_tp_size, (\n{line}\n",
    "fenced": "### Error\n```\n{line}\n```\n",
    "prose": "The trainer stops with `{line}` right after the rollout starts.\n",
    "frames": "Traceback (most recent call last):\n"
              '  File "/usr/local/lib/python3.10/dist-packages/vllm/v1/executor/abstract.py", line 54, in __init__\n'
              "    self._init_executor()\n"
              '  File "/workspace/verl/verl/workers/rollout/vllm_rollout/vllm_async_server.py", line 61, in _init_executor\n'
              "    assert len(actor_names) == vllm_dp_size * vllm_tp_size, (\n{line}\n",
}


def findings(tmp_path: Path, text: str) -> list[explain.Finding]:
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    return explain.explain_sources([log])


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("line", ASSERTS)
def test_verls_actor_count_assert_is_a_framework_vllm_mismatch_not_an_engine_bug(tmp_path, line, shape):
    first = findings(tmp_path, SHAPES[shape].format(line=line))[0]
    assert first.remedy.id == MISMATCH
    assert first.engine_bug is None


HUB_ERRORS = [
    "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the "
    "cached files.",
    "huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate the file on the Hub "
    "and we cannot find the requested files in the local cache. Please check your connection and try again or "
    "make sure your Internet connection is on.",
]
WRAPPER_PATHS = ["/huggingfaceserver/huggingfaceserver/__main__.py",
                 "/kserve-workspace/prod_venv/lib/python3.12/site-packages/huggingfaceserver/__main__.py"]


def hub_traceback(caller: str, error: str) -> str:
    return ("Traceback (most recent call last):\n"
            f'  File "{caller}", line 142, in load_model\n'
            "    model_config = AutoConfig.from_pretrained(\n"
            '  File "/opt/venv/lib/python3.12/site-packages/transformers/utils/hub.py", line 446, in cached_files\n'
            "    raise OSError(\n"
            f"{error}\n")


@pytest.mark.parametrize("caller", WRAPPER_PATHS)
@pytest.mark.parametrize("error", HUB_ERRORS)
def test_a_hub_lookup_made_by_kserves_runtime_is_the_runtimes_lookup(tmp_path, caller, error):
    first = findings(tmp_path, hub_traceback(caller, error))[0]
    assert first.remedy.id.startswith("QD-R-HF-")
    assert first.engine_bug is not None and first.engine_bug.engine == "KServe huggingfaceserver"
    assert "load_model" in first.engine_bug.raised_at
    assert first.fix[0].text.startswith("Drop --model_id")


@pytest.mark.parametrize("error", HUB_ERRORS)
def test_a_hub_lookup_made_by_the_engine_stays_a_network_problem(tmp_path, error):
    caller = "/usr/local/lib/python3.12/dist-packages/vllm/transformers_utils/config.py"
    first = findings(tmp_path, hub_traceback(caller, error))[0]
    assert first.remedy.id.startswith("QD-R-HF-")
    assert first.engine_bug is None


# The host-side causes of a failed start-up, in every wording their source prints: Docker's port allocator
# (moby daemon/libnetwork/portallocator) and name resolution in torch.distributed and Gloo.
HOST_WORDINGS = {
    "QD-R-HOST-DOCKER-PORT-ALLOCATED": [
        "docker: Error response from daemon: driver failed programming external connectivity on endpoint vllm "
        "(3f9a1c2b7d): Bind for 0.0.0.0:8000 failed: port is already allocated.",
        "Error response from daemon: driver failed programming external connectivity on endpoint sglang-1 (9c0d): "
        "Bind for [::]:30000 failed: port is already allocated",
        "Error response from daemon: failed to set up container networking: driver failed programming external "
        "connectivity on endpoint vllm (9c0d): failed to bind host port 0.0.0.0:8000/tcp: address already in use",
    ],
    "QD-R-TORCH-HOSTNAME-UNRESOLVED": [
        "[rank1]:[W1205 10:00:00.1 socket.cpp:464] [c10d] The IPv4 network addresses of (master-0.svc, 29500) "
        "cannot be retrieved (gai error: -3 - Temporary failure in name resolution).",
        "[W socket.cpp:697] [c10d] The network addresses of (head-node, 29500) cannot be retrieved Name or service "
        "not known.",
        "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. "
        "Unable to find address for: eth0",
        "RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/device.cc:127] bind_rv == 0. "
        "Unable to find address for gpu-2; bind(2) for 10.0.0.9 failed with: Cannot assign requested address",
        "RuntimeError: Cannot resolve gpu-node-2 to a (local) address",
    ],
}
HOST_SHAPES = ["{line}\n", "```\n{line}\n```\n", "**{line}**\n", "web-1  | {line}\n"]
HOST_CASES = [(entry, line, shape) for entry, lines in HOST_WORDINGS.items() for line in lines for shape in HOST_SHAPES]


@pytest.mark.parametrize(("entry", "line", "shape"), HOST_CASES)
def test_each_host_wording_names_its_entry_first(tmp_path, entry, line, shape):
    assert [f.remedy.id for f in findings(tmp_path, shape.format(line=line))][:1] == [entry]


def test_the_loopback_fallback_warning_alone_raises_nothing(tmp_path):
    """Single-node engines print it on every start: the same lookup, harmless without a failed connection."""
    text = ("[rank0]:[W1222 10:55:31.124628071 ProcessGroupGloo.cpp:715] Warning: Unable to resolve hostname to a "
            "(local) address. Using the loopback address as fallback. Manually set the network interface to bind to "
            "with GLOO_SOCKET_IFNAME. (function operator())\nINFO 12-22 10:55:31 model_runner.py:1092] Starting to "
            "load model\n")
    assert findings(tmp_path, text) == []


def test_an_unresolved_master_is_named_before_the_store_timeout_it_causes(tmp_path):
    text = (HOST_WORDINGS["QD-R-TORCH-HOSTNAME-UNRESOLVED"][0] + "\n[E1205 10:10:00.1 socket.cpp:1023] [c10d] The "
            "client socket has timed out after 600000ms while trying to connect to (master-0.svc, 29500).\n")
    ids = [f.remedy.id for f in findings(tmp_path, text)]
    assert ids[:2] == ["QD-R-TORCH-HOSTNAME-UNRESOLVED", "QD-R-TORCH-STORE-CONNECT"]
