"""Engine bugs raised on the engine's own kernel paths and layer objects, told from the raise site.

Two shapes no catalogue entry names and neither is the user's setting:

- a kernel / architecture gap: the engine's quantised-MoE or kernel-selection code (vLLM's
  vllm/model_executor/layers/fused_moe/ and quantization/, the C++ ops behind vllm/_custom_ops.py; SGLang's
  sglang/srt/layers/moe/ and quantization/, sgl_kernel) refuses the GPU it runs on with a NotImplementedError /
  RuntimeError / ValueError that names the device capability ("SM120", "sm_120", "compute capability 12.0").
  vLLM's own Marlin check words it so ("Marlin W4A8-FP8 only support SM89 or SM120 device",
  vllm/model_executor/layers/quantization/utils/marlin_utils.py); the C++ entry points raise it through
  TORCH_CHECK under torch/_ops.py ("No compiled cutlass_scaled_mm for CUDA device capability",
  csrc/quantization/cutlass_w8a8/scaled_mm_entry.cu). The release shipped no kernel for that GPU on the path
  it chose: the way out is another MoE backend (vLLM: VLLM_MXFP4_USE_MARLIN=1, read by vllm/envs.py and
  vllm/model_executor/layers/fused_moe/oracle/mxfp4.py; SGLang: --moe-runner-backend triton,
  python/sglang/srt/server_args.py) or a release whose kernels include that architecture.
- an AttributeError on the engine's own layer object: torch's Module.__getattr__ raises "'{type(self).__name__}'
  object has no attribute '{name}'" (pytorch torch/nn/modules/module.py) when an engine model file or quantisation
  method reads an attribute the engine's own layer (FusedMoE, a *Linear, an *Attention) never set: one part of
  the engine out of step with another in that release, not a dependency's API.
"""

from __future__ import annotations

import re
from typing import Sequence

from remedies.crash import Frame
from remedies.source import Located

_CLASS = r"^(?:[\w.]{0,200}\.)?"
# The engines' kernel-selection and quantisation modules, and the custom-op shims that call their C++ kernels.
KERNEL_PATH = re.compile(r"(?:^|/)(?:vllm/model_executor/layers/(?:fused_moe|quantization)/|vllm/_custom_ops\.py"
                         r"|vllm/kernels/|sglang/srt/layers/(?:moe|quantization)/|sgl_kernel/|flashinfer/)")
# The classes a refusal is raised with, FlashInfer's BackendSupportedError (flashinfer/utils.py) among them.
_REFUSAL_CLASS = re.compile(_CLASS + r"(?:NotImplementedError|RuntimeError|ValueError|AssertionError"
                            r"|\w{0,60}Support(?:ed)?Error)\b")
# The device capability as the engines and torch print it: SM120 / sm_120 / sm120a, "compute capability 12.0",
# "device capability: 120", "capability 100".
CAPABILITY = re.compile(r"(?i)\bsm[_ ]?(?:[7-9]\d|1[0-3]\d)[a-z]?\b|\bsm[_ ]?1[0-3](?:x|\.[\dx])\b"
                        r"|\b(?:compute|device|cuda) capabilit(?:y|ies)\b|\bcapability[:=]? ?\(?\d{2,3}\b")
# A floor the GPU or the toolkit is below ("requires sm75 or higher", "SM 12.x requires CUDA >= 12.9",
# flashinfer/jit/core.py and flashinfer/compilation_context.py): the user's hardware or toolkit, not a gap.
FLOOR = re.compile(r"(?i)\bor (?:higher|above|newer|later)\b|\band above\b|\bat least\b|\bminimum\b|\bsm_?\d{2,3}\+"
                   r"|\bCUDA(?: version| toolkit)? ?(?:>=|>|of at least)")
_ENGINE = re.compile(r"(?:^|/)(vllm|sglang|sgl_kernel|flashinfer)/")
_OBJECT_ATTR = re.compile(_CLASS + r"AttributeError: '(?P<cls>[A-Za-z_]\w{0,100})' object has no attribute '\w{1,200}'")
# The naming of the engines' own nn.Module layers and methods (vllm/model_executor/layers, sglang/srt/layers):
# FusedMoE, QKVParallelLinear, RowParallelLinear, VocabParallelEmbedding, ParallelLMHead, RMSNorm,
# Fp8MoEMethod, CompressedTensorsW4A4MoeMethod, Qwen3MoeSparseMoeBlock, ... A config or tokenizer (transformers'
# PretrainedConfig / *Config, *Tokenizer*) is the library's object, not the engine's.
LAYER_NAME = re.compile(r"(?:MoE|Moe|Experts?|Linear|Attention|Embedding|LMHead|Norm|Layer|Block|MLP|Method"
                        r"|ForCausalLM|ForConditionalGeneration)$")
_MODEL_PATH = re.compile(r"(?:^|/)(?:vllm/model_executor/|sglang/srt/(?:models|layers|model_loader)/)")
LOOKUP_FUNCTIONS = frozenset({"__getattr__", "__getattribute__"})

SWITCH = {
    "vllm": ("another MoE / GEMM backend for this GPU (for MXFP4 MoE VLLM_MXFP4_USE_MARLIN=1, the Marlin "
             "weight-only path vllm/envs.py reads; for FP8 / NVFP4 an unquantised or Marlin-served checkpoint)"),
    "sglang": "another MoE runner for this GPU (--moe-runner-backend triton, python/sglang/srt/server_args.py)",
}


def _path(frame: Frame) -> str:
    return frame.path.replace("\\", "/")


def capability_gap(exception: str, frames: Sequence[Frame], located: Located | None = None) -> tuple[str, Frame] | None:
    """(engine, frame) when a refusal naming the device capability (not a FLOOR) was raised in (or, under
    torch's op dispatch, called from) the engine's kernel-selection or quantisation code, or, pasted without
    frames, every mined site of its message (`located`) lies there; else None."""
    if not _REFUSAL_CLASS.search(exception) or not CAPABILITY.search(exception) or FLOOR.search(exception):
        return None
    if not frames and located is not None and located.sites:
        modules = [site.where.split("::", 1)[0] for site in located.sites]
        if all(KERNEL_PATH.search(module) for module in modules):
            engine = _ENGINE.search(modules[0])
            name = engine.group(1) if engine else "vllm"
            return ("sglang" if name == "sgl_kernel" else name), Frame(modules[0], 0, "")
        return None
    for frame in reversed(frames):
        path = _path(frame)
        if KERNEL_PATH.search(path):
            engine = _ENGINE.search(path)
            name = engine.group(1) if engine else "vllm"
            return ("sglang" if name == "sgl_kernel" else name), frame
        if _ENGINE.search(path):
            return None  # raised by other engine code (its start-up checks): the user's setting to change
    return None


def capability_reason(engine: str, exception: str) -> str:
    """What a kernel / architecture gap is and what to switch to."""
    named = CAPABILITY.search(exception)
    which = named.group(0) if named else "this GPU's capability"
    switch = SWITCH.get(engine, SWITCH["vllm"])
    return (f"The engine's own kernel path refused the device ({which}): this release ships no kernel for "
            f"this GPU architecture on the quantised-MoE / GEMM backend it chose, which is a gap of the release, "
            f"not a setting. Use {switch}, or a release whose kernels are built for this architecture.")


def own_layer_attribute(exception: str, frames: Sequence[Frame]) -> Frame | None:
    """The engine model-code frame that read a missing attribute of the engine's own layer object, or None."""
    hit = _OBJECT_ATTR.search(exception)
    if hit is None or not LAYER_NAME.search(hit.group("cls")) or hit.group("cls").endswith("Config"):
        return None
    stack = list(frames)
    while stack and stack[-1].function in LOOKUP_FUNCTIONS:
        stack.pop()
    if not stack or not _MODEL_PATH.search(_path(stack[-1])):
        return None
    return stack[-1]


LAYER_REASON = ("The engine's model code read an attribute its own layer object does not have (the object is "
                "the engine's, built by its own layers): a model-code regression of this release, not a "
                "dependency's API. Use the release before or after it, or another quantisation of the model.")
