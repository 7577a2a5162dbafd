"""Marlin's MoE thread-tile padding: the routed experts' intermediate size per rank, as vLLM repacks it.

vLLM 0.26.0 and later (layers/quantization/utils/marlin_utils.py marlin_moe_padded_intermediate, read in the 0.26.0,
0.29.0-0.31.0 and 0.34.0 wheels and the 0.32.0 CPU build) zero-pads a tile-misaligned intermediate size at weight
preparation: `round_up(intermediate_size_per_partition, math.lcm(64, group))` ("gate-up needs n=2*intermediate %
128, down needs k=intermediate % 64", kept a multiple of the quantisation group). It pads the Marlin weights of
INT4 checkpoints (fused_moe/oracle/int_wna16.py, MARLIN / BATCHED_MARLIN post-processing: w13's shard columns,
w2's rows, their scales and zero points) and of FP8 ones run as Marlin W8A16 (marlin_utils_fp8.py
prepare_fp8_moe_layer_for_marlin, group = weight_block_size[1]). The layer is admitted with the padding
(check_moe_marlin_supports_layer(..., allow_tile_padding=True): auto_gptq.py without desc_act, auto_awq.py,
compressed_tensors_moe.py without act-order); the padded tensors replace the loaded ones inside load_model, so
"Model loading took" measures them. Qwen3.5-35B-A3B's experts have I = 512: I / TP is 512, 256, 128, 64 at TP 1, 2,
4, 8, and a group of 128 pads TP 8's 64 to 128, doubling the experts' bytes per rank; every TP from 1 to 8 that
divides I into a multiple of lcm(64, group) is left as it is. With expert parallelism I is not split.
Releases before 0.26.0 (0.20.1 and 0.22.0 read) have no padding: check_moe_marlin_supports_layer asks
`intermediate_size_per_partition % max(64, group_size) == 0` and the layer falls back to the MoeWNA16 Triton kernels
(auto_gptq.py "Falling back to Moe WNA16 kernels"), whose weights are the checkpoint's. 0.23-0.25 are not read and
are taken as 0.22. Act-order (desc_act) checkpoints are never padded; the registry does not record desc_act, so an
act-order checkpoint is planned as one without.
"""

from __future__ import annotations

import math

from packaging.version import Version

from doctor.models.spec import ModelSpec
from doctor.planner.config import ASSUMED_VLLM_VERSION, ServeConfig
from doctor.planner.moe import marlin_experts

PADDING_SINCE = Version("0.26.0")
THREAD_TILE = 64


def padded_intermediate(intermediate: int, group: int) -> int:
    """marlin_moe_padded_intermediate: the smallest multiple of lcm(64, group) (group <= 0: 64) that is at least
    `intermediate`."""
    step = math.lcm(THREAD_TILE, group if group > 0 else 1)
    return -(-intermediate // step) * step


def marlin_group(spec: ModelSpec) -> int:
    """The group the padding keeps whole: INT checkpoints' group_size, FP8's weight block's input side (-1: none)."""
    q = spec.quantization
    if q.method == "fp8":
        return q.weight_block_size[1] if q.weight_block_size else -1
    return q.group_size


def expert_padding(spec: ModelSpec, cfg: ServeConfig, capability: tuple[int, int] | None) -> float:
    """The factor Marlin's padding multiplies one vLLM rank's routed-expert weights by (1.0 where it does not pad)."""
    if (cfg.backend != "vllm" or capability is None or spec.moe is None or "experts" not in spec.quantization.modules
            or not marlin_experts(spec, cfg, capability)):
        return 1.0
    if Version(Version(cfg.backend_version or ASSUMED_VLLM_VERSION).base_version) < PADDING_SINCE:
        return 1.0
    inter = spec.moe.intermediate_size // (1 if cfg.expert_parallel else cfg.tp)
    if inter <= 0:
        return 1.0
    return padded_intermediate(inter, marlin_group(spec)) / inter
