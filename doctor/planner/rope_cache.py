"""The rotary cos / sin caches vLLM registers as module buffers while the model loads.

Every attention layer asks model_executor/layers/rotary_embedding/__init__.py get_rope for its rotary embedding;
get_rope keeps one per (head size, rotary dim, max position, rope parameters, dtype) in `_ROPE_DICT`, so the layers
of one model share one, and a drafter with other parameters builds its own. RotaryEmbeddingBase.__init__
(rotary_embedding/base.py) registers `cos_sin_cache`, [max_position, rotary_dim] in the model dtype, as a
non-persistent buffer: allocated during the load, so "Model loading took" counts it besides the parameters.

- Qwen3.5 / 3.6 (rope_parameters with mrope_section, partial_rotary_factor 0.25: the registry config, read by
  models/qwen3_next.py Qwen3NextAttention get_rope(max_position=config.max_position_embeddings)) take
  rotary_embedding/mrope.py MRotaryEmbedding, whose cache spans `cache_max_position_num` positions:
  max_position_embeddings x 4 in 0.26.0 ("We enlarge max_position_embeddings to 4 times"); from 0.32.0
  (models/qwen3_vl.py mrope_positions_factor, read in the 0.32.0 build) x 4 only with multimodal pruning, else x 1.
  262,144 x 4 x 64 x 2 B = 0.125 GiB on the 0.26.0 boots, which logged 0.13 GiB above the parameters.
- A DFlash drafter (models/qwen3_dflash.py DFlashQwen3Attention, get_rope(max_position=
  config.max_position_embeddings), no partial rotary factor: rotary dim = head dim) keys a cache of its own:
  262,144 x 128 x 2 B = 0.0625 GiB for z-lab/Qwen3.5-35B-A3B-DFlash.
Architectures whose rotary parameters were not read count no cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from packaging.version import Version

from doctor.models.spec import dtype_bytes
from doctor.planner.config import ASSUMED_VLLM_VERSION

if TYPE_CHECKING:
    from doctor.models.spec import ModelSpec
    from doctor.planner.config import ServeConfig
    from doctor.planner.drafters import DrafterSpec

# architecture -> partial_rotary_factor of the checkpoints that take M-RoPE (doctor/models/registry.yaml
# rope_parameters: {mrope_section: [11, 11, 10], partial_rotary_factor: 0.25})
MROPE_ARCHITECTURES = {
    "Qwen3_5MoeForConditionalGeneration": 0.25,
    "Qwen3_5ForConditionalGeneration": 0.25,
}
MROPE_WIDE_CACHE_FACTOR = 4                   # mrope.py cache_max_position_num in 0.26.0
MROPE_NARROW_SINCE = Version("0.32.0")        # qwen3_vl.py mrope_positions_factor: 1 without multimodal pruning


def mrope_positions_factor(version: str | None) -> int:
    """How many times max_position_embeddings the M-RoPE cache spans in this vLLM release."""
    release = Version(Version(version or ASSUMED_VLLM_VERSION).base_version)
    return 1 if release >= MROPE_NARROW_SINCE else MROPE_WIDE_CACHE_FACTOR


def target_rope_cache_bytes(spec: "ModelSpec", cfg: "ServeConfig") -> int:
    """Bytes of the target's shared cos / sin cache on a rank that holds attention layers (0: not read)."""
    partial = MROPE_ARCHITECTURES.get(spec.architecture)
    if partial is None:
        return 0
    rotary_dim = int(spec.attention.head_dim * partial)
    positions = spec.max_position_embeddings * mrope_positions_factor(cfg.backend_version)
    return positions * rotary_dim * dtype_bytes(spec.dtype)


def drafter_rope_cache_bytes(drafter: "DrafterSpec") -> int:
    """Bytes of a DFlash drafter's own cos / sin cache (0 for the drafters whose rotary code was not read)."""
    if drafter.method != "dflash":
        return 0
    return drafter.max_position * drafter.head_dim * dtype_bytes(drafter.dtype)
