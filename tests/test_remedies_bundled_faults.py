"""Faults raised in what ships with the engine: an assertion of DeepEP's whose condition is its per-rank token
limit names the knob that sizes it (not an engine bug); a native crash whose stack runs through a KV-transfer
library (NIXL, Mooncake, LMCache) is that library's bug; a CPU-only torch is named, and, when the image shipped
it, named as the image's packaging bug."""

from __future__ import annotations

import pytest

from remedies.kvtransfer import transfer_library
from remedies.packaged import image_torch
from tests.pastes import SITE, traceback_text
from tests.pastes import explain_paste as explain

DEEPEP = "QD-R-CUDA-DEEPEP-DISPATCH-TOKENS-PER-RANK"
CPU_TORCH = "QD-R-TORCH-CPU-ONLY-BUILD"


CONDITIONS = ["x.size(0) == topk_idx.size(0) and x.size(0) <= num_max_dispatch_tokens_per_rank",
              "x.size(0) == topk_idx.size(0) && x.size(0) <= num_max_dispatch_tokens_per_rank",
              "num_tokens <= num_max_dispatch_tokens_per_rank"]
PLACES = [("/sgl-workspace/DeepEP/csrc/deep_ep.cpp", 1105), ("/tmp/DeepEP/csrc/deep_ep.cpp", 1262),
          ("deep_ep.cpp", 987)]
CALLERS = [("/sgl-workspace/sglang/python/sglang/srt/layers/moe/token_dispatcher/deepep.py", "_dispatch_core"),
           (f"{SITE}/vllm/model_executor/layers/fused_moe/deepep_ll_prepare_finalize.py", "prepare_async")]


@pytest.mark.parametrize("condition", CONDITIONS)
@pytest.mark.parametrize(("cpp", "line"), PLACES)
@pytest.mark.parametrize(("caller", "func"), CALLERS)
def test_deepeps_per_rank_token_assertion_names_the_knob_not_an_engine_bug(tmp_path, condition, cpp, line,
                                                                           caller, func):
    frames = [(caller, 500, func, "self.buffer.low_latency_dispatch(x, topk_idx)"),
              (f"{SITE}/deep_ep/buffer.py", 600, "low_latency_dispatch", "self.runtime.low_latency_dispatch(x, topk_idx,")]
    text = traceback_text("", frames, f"RuntimeError: Failed: Assertion error {cpp}:{line} '{condition}'")
    found = explain(tmp_path, text)
    assert found[0].remedy.id == DEEPEP
    assert found[0].engine_bug is None
    assert "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK" in " ".join(step.text for step in found[0].steps)


def test_the_deepep_assertion_pasted_alone_still_names_the_knob(tmp_path):
    found = explain(tmp_path, "Decode dies at graph capture with\n`RuntimeError: Failed: Assertion error deep_ep.cpp:1105 "
                              "'x.size(0) <= num_max_dispatch_tokens_per_rank'`\n")
    assert found[0].remedy.id == DEEPEP


LIBRARIES = [("nixl", f'  File "{SITE}/nixl/_api.py", line 412 in transfer'),
             ("mooncake", "#3 0x00007f3a2c1d4e10 in mooncake::TransferEngine::submitTransfer() from "
                          f"{SITE}/mooncake/libtransfer_engine.so"),
             ("lmcache", f'  File "{SITE}/lmcache/v1/storage_backend/local_cpu_backend.py", line 88 in put'),
             ("nixl", "#5 0x00007f00 in nixlAgent::postXferReq(...) () from /opt/nvidia/nixl/lib/libnixl.so")]
DEATHS = ["Fatal Python error: Segmentation fault", "Segmentation fault (core dumped)", "Fatal Python error: Aborted"]


@pytest.mark.parametrize(("library", "stack_line"), LIBRARIES)
@pytest.mark.parametrize("death", DEATHS)
@pytest.mark.parametrize("engine_line", ["(EngineCore_DP0 pid=4410) INFO 03-01 10:00:00 [core.py:90] vLLM is ready",
                                         "[2026-03-01 10:00:00 TP0] Prefill bootstrap server started (sglang)"])
def test_a_native_crash_inside_a_kv_transfer_library_is_that_librarys_bug(tmp_path, library, stack_line, death,
                                                                          engine_line):
    text = f"{engine_line}\n{death}\n\nThread 0x00007f1 (most recent call first):\n{stack_line}\n"
    found = explain(tmp_path, text)
    bug = found[0].engine_bug
    assert bug is not None and library in bug.raised_at
    assert "transfer" in bug.why


def test_a_kv_library_named_only_in_a_record_is_not_the_crash_site():
    lines = ["(EngineCore_DP0 pid=1) INFO 03-01 [nixl_connector.py:300] Initializing NIXL wrapper",
             "Segmentation fault (core dumped)"]
    assert transfer_library("Segmentation fault (core dumped)", lines) is None
    assert transfer_library("ValueError: bad config", [f'  File "{SITE}/nixl/_api.py", line 3 in f']) is None


CPU_MESSAGES = ["AssertionError: Torch not compiled with CUDA enabled",
                "ImportError: libtorch_cuda.so: cannot open shared object file: No such file or directory",
                "OSError: libc10_cuda.so: cannot open shared object file: No such file or directory"]


@pytest.mark.parametrize("message", CPU_MESSAGES)
@pytest.mark.parametrize(("prefix", "shipped"), [("/usr/local/lib/python3.12/dist-packages", True),
                                                 ("/app/.venv/lib/python3.11/site-packages", False),
                                                 ("/Users/me/venv/lib/python3.11/site-packages", False),
                                                 ("/opt/conda/envs/serve/lib/python3.10/site-packages", False)])
def test_a_cpu_only_torch_is_named_and_the_images_bug_only_when_the_image_shipped_it(tmp_path, message, prefix,
                                                                                    shipped):
    frames = [(f"{prefix}/vllm/platforms/cuda.py", 20, "<module>", "import vllm._C"),
              (f"{prefix}/torch/cuda/__init__.py", 310, "_lazy_init", "raise err")]
    text = traceback_text("", frames, message)
    found = explain(tmp_path, text)
    assert found[0].remedy.id == CPU_TORCH
    assert (found[0].engine_bug is not None) == shipped


def test_a_cpu_build_version_in_the_log_names_the_packaging():
    assert image_torch(["torch==2.9.0+cpu", "x"]) is not None
    assert image_torch(["torch==2.9.0+cu128"]) is None


@pytest.mark.parametrize("arch", ["DotsOCRForCausalLM", "Glm4MoeLiteForCausalLM", "Qwen3_5MoeForConditionalGeneration",
                                  "KimiLinearForCausalLM"])
def test_the_unsupported_architecture_advice_names_the_architecture_the_log_names(tmp_path, arch):
    text = (f"ValueError: Model architectures ['{arch}'] are not supported for now. Supported architectures: "
            "dict_keys(['AfmoeForCausalLM', 'ApertusForCausalLM'])\n")
    found = explain(tmp_path, text)
    assert found[0].remedy.id == "QD-R-VLLM-ARCH-UNSUPPORTED"
    assert arch in found[0].steps[0].text
