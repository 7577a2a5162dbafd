"""Engine bugs on the engine's own kernel paths and layer objects (`remedies.layergaps`): a refusal naming the
device capability raised in the engine's quantised-MoE / kernel-selection code is a kernel gap of that release
with another backend as the way out; an AttributeError on the engine's own layer object, raised through torch's
Module.__getattr__, is a model-code regression, not a dependency's API."""

from __future__ import annotations

import pytest

from remedies.crash import Frame
from remedies.layergaps import capability_gap, own_layer_attribute
from tests.pastes import SITE, traceback_text
from tests.pastes import explain_paste as explain

PREFIXES = ("", "(EngineCore_DP0 pid=311) ", "[2026-03-01 10:00:00 TP0] ")


VLLM_ORACLE = (f"{SITE}/vllm/model_executor/layers/fused_moe/oracle/mxfp4.py", 120, "select_mxfp4_moe_backend",
               "raise NotImplementedError(msg)")
VLLM_QUANT = (f"{SITE}/vllm/model_executor/layers/quantization/modelopt.py", 900, "process_weights_after_loading",
              "self.kernel = select_nvfp4_moe_backend(layer)")
VLLM_OPS = (f"{SITE}/vllm/_custom_ops.py", 800, "cutlass_scaled_mm", "out = torch.ops._C.cutlass_scaled_mm(a, b)")
TORCH_OPS = (f"{SITE}/torch/_ops.py", 1158, "__call__", "return self._op(*args, **(kwargs or {}))")
SGLANG_MOE = ("/sgl-workspace/sglang/python/sglang/srt/layers/moe/fused_moe_triton/layer.py", 700, "forward",
              "raise RuntimeError(msg)")
SGL_KERNEL = (f"{SITE}/sgl_kernel/gemm.py", 90, "cutlass_fp4_group_mm", "return torch.ops.sgl_kernel.fp4_mm(a)")

GAPS = [
    ([VLLM_QUANT, VLLM_ORACLE], "NotImplementedError: No MXFP4 MoE backend supports the device capability 120.", "vllm"),
    ([VLLM_ORACLE], "NotImplementedError: FlashInfer CUTLASS MoE is not supported on SM120", "vllm"),
    ([VLLM_QUANT, VLLM_OPS, TORCH_OPS],
     "RuntimeError: No compiled cutlass_scaled_mm for CUDA device capability: 120. Required capability: 90 or 100",
     "vllm"),
    ([SGLANG_MOE], "RuntimeError: fp4 grouped gemm is only compiled for sm_100a, got sm_121", "sglang"),
    ([SGLANG_MOE, SGL_KERNEL, TORCH_OPS], "RuntimeError: Unsupported compute capability 12.0 for this kernel", "sglang"),
]


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize(("frames", "exception", "engine"), GAPS)
def test_a_capability_refusal_in_the_engines_kernel_path_is_named_an_engine_bug(tmp_path, prefix, frames,
                                                                                exception, engine):
    found = explain(tmp_path, traceback_text(prefix, frames, exception))
    bug = found[0].engine_bug
    assert bug is not None and bug.engine == engine
    assert "moe-runner-backend" in bug.why or "VLLM_MXFP4_USE_MARLIN" in bug.why


def test_a_capability_refusal_of_the_start_up_checks_is_not_a_kernel_gap():
    frames = [Frame(f"{SITE}/vllm/config/model.py", 400, "verify_quantization"),
              Frame(f"{SITE}/vllm/model_executor/layers/quantization/fp8.py", 40, "get_min_capability")]
    assert capability_gap("ValueError: fp8 needs compute capability 89", frames[:1]) is None
    assert capability_gap("ValueError: fp8 needs compute capability 89", frames) is not None


def test_a_kernel_path_error_that_names_no_capability_is_left_to_the_other_rules():
    frames = [Frame(VLLM_ORACLE[0], 120, "select")]
    assert capability_gap("RuntimeError: expected a contiguous tensor", frames) is None


LAYERS = ["FusedMoE", "QKVParallelLinear", "RowParallelLinear", "Qwen3MoeSparseMoeBlock", "Fp8MoEMethod",
          "VocabParallelEmbedding"]
MODEL_FILES = [f"{SITE}/vllm/model_executor/models/qwen3_moe.py",
               f"{SITE}/vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors_moe.py",
               "/sgl-workspace/sglang/python/sglang/srt/models/qwen3_moe.py"]
GETATTR = (f"{SITE}/torch/nn/modules/module.py", 1940, "__getattr__", "raise AttributeError(")


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("path", MODEL_FILES)
@pytest.mark.parametrize("through_torch", [True, False])
def test_an_attribute_missing_on_the_engines_own_layer_is_a_model_code_bug_not_a_dependency(
        tmp_path, layer, path, through_torch):
    frames = [(path, 700, "load_weights", "scale = layer.w13_weight_scale")]
    if through_torch:
        frames.append(GETATTR)
    exception = f"AttributeError: '{layer}' object has no attribute 'w13_weight_scale'. Did you mean: 'w13_scale'?"
    found = explain(tmp_path, traceback_text("", frames, exception))
    assert found[0].remedy.id != "QD-R-VLLM-DEPENDENCY-VERSION"
    assert found[0].engine_bug is not None
    assert found[0].engine_bug.frame is not None and found[0].engine_bug.frame.path == path


def test_a_library_object_missing_an_attribute_is_not_the_engines_layer():
    frames = [Frame(MODEL_FILES[0], 700, "load_weights"), Frame(*GETATTR[:3])]
    assert own_layer_attribute("AttributeError: 'Qwen3MoeConfig' object has no attribute 'layer_types'", frames) is None
    assert own_layer_attribute("AttributeError: 'Qwen2TokenizerFast' object has no attribute 'x'", frames) is None
    assert own_layer_attribute("AttributeError: 'FusedMoE' object has no attribute 'x'", frames) == frames[0]


def test_a_layer_attribute_read_outside_the_engines_model_code_is_not_claimed():
    frames = [Frame("/srv/trainer/train.py", 12, "main"), Frame(*GETATTR[:3])]
    assert own_layer_attribute("AttributeError: 'FusedMoE' object has no attribute 'x'", frames) is None


@pytest.mark.parametrize("floor", ["RuntimeError: FlashInfer requires GPUs with sm75 or higher",
                                   "RuntimeError: SM 12.x requires CUDA >= 12.9",
                                   "ValueError: this kernel needs at least compute capability 8.0"])
def test_a_floor_the_gpu_or_toolkit_is_below_is_not_a_kernel_gap(floor):
    frames = [Frame(f"{SITE}/flashinfer/jit/core.py", 40, "check_cuda_arch")]
    assert capability_gap(floor, frames) is None


def test_a_frameless_capability_refusal_is_placed_by_the_mined_sites_of_its_message():
    from remedies.source import locate
    message = "BackendSupportedError: cutlass does not support compute capability 120"
    gap = capability_gap(message, [], locate([message]))
    assert gap is not None and gap[0] == "flashinfer"
    assert capability_gap(message, [], None) is None
