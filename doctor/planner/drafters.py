"""Speculative drafters that are separate models (EAGLE, EAGLE3, DFlash): their weights and KV cache per rank.

Read from vLLM 0.26.0 (the files of the published wheel):
- weights: model_executor/models/qwen3_dflash.py (DFlashQwen3Model: QKVParallelLinear / RowParallelLinear
  attention and a TP-sharded SwiGLU MLP per layer, `fc` a ReplicatedLinear over len(target_layer_ids) x
  the target's hidden size) and llama_eagle3.py (layer 0 takes 2 x hidden into q/k/v, `fc` ReplicatedLinear
  over 3 hidden states, its own `lm_head` over draft_vocab_size plus the int64 `draft_id_to_target_id` map).
  The drafter runs with the target's TP. v1/spec_decode/llm_base_proposer.py _maybe_share_embeddings /
  _maybe_share_lm_head: a drafter without its own embed_tokens / lm_head in the checkpoint uses the
  target's, and the draft copies are deleted before "Model loading took" is measured
  (utils/mem_utils.py DeviceMemoryProfiler: allocated bytes, so freed copies do not count).
- KV cache: every drafter attention layer gets its own KV spec (FullAttentionSpec with the drafter's
  kv heads / head size) and joins the hybrid KV manager (v1/core/kv_cache_utils.py):
  unify_kv_cache_spec_page_size raises the block size of a smaller page to the largest page (mamba pages
  are padded), _get_kv_cache_groups_uniform_page_size groups layers of identical spec, group size = the
  smallest layer count of a spec (the largest when max < 1.5 x min), cdiv(layers, group size) groups per
  spec. A drafter whose spec equals the target's (the checkpoint's MTP layer) merges with it.
- SGLang (versions.sglang_rules, read in the 0.5.9-0.5.23 wheels): up to 0.5.13 the target sizes its pools
  (model_runner_kv_cache_mixin.py init_memory_pool) before managers/scheduler.py loads the draft worker, whose
  EAGLE / EAGLE3 / STANDALONE drafter then gets a KV pool of the same number of tokens (0.5.9
  draft_runner_cache_size, the target's MemoryPoolConfig from 0.5.10) for its own layers, out of the memory
  left outside --mem-fraction-static. The target's cell (bytes per token)
  prices the drafter's KV for DFLASH from 0.5.11 (x (full + draft layers) / full layers, rounded up) and for
  EAGLE / EAGLE3 / STANDALONE from 0.5.14 (x (1 + draft layers / full layers): pool_configurator.py
  DefaultPoolConfigurator); from 0.5.14 the drafter also loads before the pools are sized, so its weights
  count. From 0.5.18 DFLASH adds the drafter's own bytes per token (its kv heads and head size) instead of the
  layer ratio. SGLang's pool is planned for every drafter layer (sliding-window drafter layers as full
  attention: an upper bound); --speculative-draft-kv-cache-dtype is not modelled (the target's KV dtype).
- CUDA graphs (read in the 0.20.1, 0.22.0, 0.26.0 and 0.32.0 sources): the drafter has no graph pool of its own.
  gpu_model_runner.py _dummy_run calls drafter.dummy_run with use_cudagraphs only while the target captures a
  PIECEWISE graph ("Eagle currently only supports PIECEWISE cudagraphs"), so each PIECEWISE capture also captures
  the drafter (DFlash: at min(size, max_num_seqs x (1 + k)) query tokens, its context K/V precomputed eagerly,
  v1/spec_decode/dflash.py dummy_run) into the same pool; profile_cudagraph_memory swaps every CUDAGraphWrapper's
  pool (the drafter's included) for its profiling pool, so "Estimated CUDA graph memory" and the pool's actual
  size already hold the drafter's graphs. What the drafter changes is the capture plan (capture.capture_sizes /
  spec_full_decode: sizes rounded to multiples of 1 + k, FULL decode graphs only on a UNIFORM_BATCH backend),
  planned exactly for every published speculative boot that logs it. The one DFlash boot held
  (tests/data/published_kv/vllm-partial.yaml, GB10, vLLM 0.22.0, k = 6, 8 sequences) logged 0.65 GiB estimated /
  0.64 GiB actual against 0.44 GiB planned, and its KV pool is planned within 0.9%; no public boot of this
  model family with a larger drafter graph pool is held (vllm-project/vllm#50722's TP 4 DFlash boot logged a
  2.22 GiB estimate, but its log is cut before max_num_seqs and its pool). The drafter's own profile-run peak
  (DFlash: its context K/V projection over max_num_batched_tokens after the target's forward, with the target's
  aux hidden states held) is a phase of its own: doctor/planner/drafter_run.py.
  The V1 runner's dummy rejection sampler, which any speculative method adds to the profile run, is
  (overhead.rejection_sampler_bytes). The proposer's persistent buffers (llm_base_proposer.py, 0.26.0: input ids,
  positions, hidden states and input embeddings over max_num_batched_tokens, 64 MiB at 8,192 tokens for a
  2,048-wide drafter) are allocated in the runner's constructor, before memory_profiling's before-profile
  snapshot and outside torch's peak increase, the non-torch increase and the weights (utils/mem_utils.py): they
  do not move the KV cache and are not planned.
- The V2 model runner, the default for this hybrid model from vLLM 0.29.0 (overhead.v1_model_runner), works
  otherwise (read in the 0.30.0 and 0.34.0 wheels): its profile run calls the speculator's propose with
  dummy_run=True and samples once, without a rejection sampler (v1/worker/gpu/model_runner.py); a DFlash
  speculator captures its own FULL_DECODE_ONLY graphs (v1/worker/gpu/spec_decode/dflash/cudagraph.py,
  decode_query_lens {1 + k: max_num_seqs}: sizes rounded up to multiples of 1 + k, at most max_num_seqs
  requests and max_cudagraph_capture_size tokens), each holding the draft logits of num_reqs x k rows
  (spec_decode/speculator.py sample_draft: compute_logits inside the graph), and profile_cudagraph_memory
  (v1/worker/gpu/cudagraph_utils.py) measures "PIECEWISE, encoder and speculator graphs ... in full" instead
  of extrapolating them. EAGLE / MTP speculators of the V2 runner (spec_decode/target_dependent_ar, read in
  0.32.0) capture two sets: draft prefill graphs in the target's mode at query length 1 + k, and FULL_DECODE_ONLY
  draft decode graphs at query length 1. With the default greedy draft sampling no draft-logits cache is
  allocated (speculator.py: only draft_sample_method "probabilistic" keeps max_num_seqs x k x vocabulary
  logits); the graphs hold num_reqs x k rows of draft logits while they run: 32 requests x 15 tokens x 248,320
  x 2 bytes = 0.22 GiB at the 512-token ceiling. In 0.34.0 (config/vllm.py get_draft_decode_cudagraph_request_sizes,
  v1/worker/gpu/spec_decode/autoregressive/speculator.py, cudagraph_utils.py CudaGraphManager._init_candidates)
  the draft prefill graphs take n x (1 + k) tokens for n on the request grid up to min(max_num_seqs, the ceiling /
  (1 + k)), as the target's decode graphs do, while the one-token draft decode graphs (EAGLE, EAGLE3, single-module
  MTP, draft models, k >= 2) take n x 1 tokens for n on the grid up to max_num_seqs itself, past the target's cap
  ("their graphs are small"): the drafter's graphs are not capture sizes x (1 + k) throughout. The target's own
  capture plan per release is capture.py's (the uniform decode sizes of 0.29+ included). The speculator's graphs
  are planned there too (capture.speculator_graphs, speculator_logit_rows): each at the target's fitted per-graph
  increment, and the draft logits of its largest FULL graph as new pool memory (the target's graphs hold no
  logits). No public boot of this family on 0.29+ with a drafter is held to check either figure.
- A DFlash graph pool of several GiB is not a release's: between the merges of vllm-project/vllm#50488 and #54418
  (nightly builds only) the uniform decode sizes reached max_num_seqs x (1 + k) tokens, 2,176 in DFlash's nightly CI,
  whose graphs left 0.94 GiB of KV cache where 5.12 GiB were needed (#54418); 0.29.0 caps them at the ceiling
  (capture.default_sizes). A boot of such a build is planned as its release and misses those graphs.
  Issue 26's DFlash boot that logged 6.24 GiB of graphs against 0.58 GiB planned is not explained by any release
  read: in 0.29.0-0.31.0 and 0.34.0 the speculator's graphs (at most the target's FULL decode count, 32 requests x
  15 draft rows = 0.22 GiB of BF16 logits at the 512-token ceiling) and in 0.20.1-0.26.0 the drafter captured
  inside the target's PIECEWISE graphs stay within the capture ceiling; only the nightly builds above exceed it.
Drafter configs live in doctor/models/registry.yaml (`drafters:`, each with a cited source); a local
drafter directory with a config.json is read the same way.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any


from doctor.deployment.table import option
from doctor.models.spec import ModelSpec, dtype_bytes
from doctor.planner.config import ServeConfig
from doctor.planner.errors import PlanInputError
from doctor.planner.methods import MODEL_METHODS, MTP_METHODS, NO_MODEL_METHODS
from doctor.planner.state import kv_dtype_bytes, kv_heads_per_rank
from doctor.planner.versions import SglangRules
from doctor.safeio import CONFIG_MAX_BYTES, read_json



@dataclass(frozen=True)
class DrafterSpec:
    """The parts of a drafter's config.json that decide its memory."""

    name: str
    method: str                    # dflash | eagle3 | eagle
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    draft_vocab_size: int
    aux_hidden_states: int         # target hidden states `fc` concatenates (0: no fc)
    target_hidden_size: int
    sliding_layers: int = 0
    sliding_window: int = 0
    dtype: str = "bfloat16"
    source: str = ""
    max_position: int = 0          # max_position_embeddings: the rows of its rotary cache (rope_cache.py)

    @property
    def own_lm_head(self) -> bool:
        """EAGLE3 heads ship an lm_head over a smaller draft vocabulary; DFlash / EAGLE share the target's."""
        return self.draft_vocab_size != self.vocab_size

    def weight_bytes(self, tp: int) -> int:
        """Bytes of the drafter's weights on one rank of a TP group of `tp`."""
        h, hd, kv = self.hidden_size, self.head_dim, max(1, self.num_kv_heads // tp)
        params = 0.0
        for layer in range(self.num_layers):
            width = 2 * h if self.method == "eagle3" and layer == 0 else h
            params += self.num_heads * hd * width / tp + 2 * kv * hd * width   # q / k / v
            params += self.num_heads * hd * h / tp                              # o
            params += 3 * h * self.intermediate_size / tp                       # gate, up, down
            params += 2 * h + 2 * hd                                            # norms, q/k norms
        params += self.aux_hidden_states * self.target_hidden_size * h + 2 * h  # fc (replicated), norms
        if self.own_lm_head:
            params += math.ceil(self.draft_vocab_size / tp) * h
        mapping = 8 * self.draft_vocab_size if self.own_lm_head else 0         # int64 draft -> target ids
        return int(params * dtype_bytes(self.dtype) + mapping)

    def fused_kv_copy_bytes(self, tp: int) -> int:
        """A DFlash drafter's stacked copies of its layers' K/V projection and K-norm weights, built once weights
        are loaded (models/qwen3_dflash.py DFlashQwen3Model._build_context_kv_buffers: `torch.cat` of every
        layer's qkv_proj.weight[q_size:], [L x 2 x kv_size, hidden], and `torch.stack` of the k_norm weights,
        [L, head_dim]; read in 0.26.0 and the 0.32.0 CPU build, the same for an unquantized drafter) for
        precompute_and_store_context_kv's one fused GEMM. Loaded weights build them in load_weights, so
        "Model loading took" counts them; a dummy load builds them in the profile's first precompute ("DFlash
        buffer initialization was skipped"), where they stay: either way they leave the KV cache. 0 for the
        other drafters."""
        if self.method != "dflash":
            return 0
        kv_size = max(1, self.num_kv_heads // tp) * self.head_dim
        return int(self.num_layers * (2 * kv_size * self.hidden_size + self.head_dim) * dtype_bytes(self.dtype))

    def kv_bytes_per_token_per_layer(self, target: ModelSpec, cfg: ServeConfig) -> int:
        """K and V of one token in one drafter layer on one rank (the target's KV cache dtype)."""
        return int(2 * max(1, self.num_kv_heads // cfg.tp) * self.head_dim * kv_dtype_bytes(target, cfg))

    def same_kv_spec_as(self, target: ModelSpec, tp: int) -> bool:
        """Whether vLLM gives the drafter's layers the target's KV spec (then they share its groups)."""
        a = target.attention
        return (self.sliding_layers == 0 and self.head_dim == a.head_dim
                and max(1, self.num_kv_heads // tp) == kv_heads_per_rank(target, tp))


def drafter_from_config(config: dict[str, Any], name: str, source: str, method: str | None = None) -> DrafterSpec:
    """A DrafterSpec from a drafter's config.json content (HF field names)."""
    config = {**config, **(config.get("text_config") or {})}
    arch = " ".join(config.get("architectures") or []).lower()
    kind = (method or ("dflash" if "dflash" in arch else "eagle3" if "eagle3" in arch else "eagle")).lower()
    dflash = {**(config.get("eagle_config") or {}), **(config.get("dflash_config") or {})}
    try:
        hidden = int(config["hidden_size"])
        heads = int(config["num_attention_heads"])
        layers = int(config["num_hidden_layers"])
        vocab = int(config["vocab_size"])
        aux = len(dflash.get("target_layer_ids") or config.get("eagle_aux_hidden_state_layer_ids") or [])
        if not aux:
            aux = layers if kind == "dflash" else (3 if kind == "eagle3" else 0)
        types = config.get("layer_types") or []
        return DrafterSpec(
            name=name, method=kind, hidden_size=hidden, num_layers=layers, num_heads=heads,
            num_kv_heads=int(config.get("num_key_value_heads", heads)),
            head_dim=int(config.get("head_dim") or hidden // heads),
            intermediate_size=int(config["intermediate_size"]), vocab_size=vocab,
            draft_vocab_size=int(config.get("draft_vocab_size") or vocab), aux_hidden_states=aux,
            target_hidden_size=int(config.get("target_hidden_size") or hidden),
            # qwen3_dflash.py _resolve_layer_attention: dflash_config.use_swa without sliding layer_types
            # makes every layer sliding
            sliding_layers=sum(1 for t in types if t == "sliding_attention")
            or (layers if dflash.get("use_swa") else 0),
            sliding_window=int(dflash.get("swa_window_size") or config.get("sliding_window") or 0),
            dtype=str(config.get("torch_dtype") or config.get("dtype") or "bfloat16"), source=source,
            max_position=int(config.get("max_position_embeddings") or 0))
    except (KeyError, TypeError, ValueError) as exc:
        raise PlanInputError(f"drafter {name}: config.json lacks a usable {exc} field") from None


@lru_cache(maxsize=1)
def known_drafters() -> dict[str, DrafterSpec]:
    """The `drafters:` of doctor/models/registry.yaml by lower-cased name and alias."""
    from doctor.models.registry import drafter_entries

    entries = drafter_entries()
    out: dict[str, DrafterSpec] = {}
    for name, entry in entries.items():
        if not entry.get("source"):
            raise PlanInputError(f"drafter registry entry {name!r} must cite a source")
        spec = drafter_from_config(entry["config"], name, str(entry["source"]), entry.get("method"))
        for key in [name, *(entry.get("aliases") or [])]:
            out[str(key).lower()] = spec
    return out


def _basename(ref: str) -> str:
    return Path(ref.rstrip("/")).name.lower()


def resolve_drafter(method: str, model: str | None) -> DrafterSpec | None:
    """The drafter a --speculative-config / --speculative-algorithm names; None when it is the checkpoint's
    own MTP head or a method without a model (ngram). A model that is neither registered nor a local
    directory with config.json is a PlanInputError naming the known drafters."""
    kind = method.lower()
    if kind in MTP_METHODS or kind in NO_MODEL_METHODS:
        return None
    if kind not in MODEL_METHODS:
        raise PlanInputError(f"speculative method {method!r} is not planned; known: "
                             f"{', '.join(m for m in MTP_METHODS + MODEL_METHODS + NO_MODEL_METHODS if m)}")
    if not model:
        raise PlanInputError(f"speculative method {method} needs the drafter model (\"model\" / "
                             f"{option('speculative_draft_model')})")
    registry = known_drafters()
    found = registry.get(model.lower()) or next(
        (s for k, s in registry.items() if _basename(k) == _basename(model)), None)
    if found is not None:
        return found
    path = Path(model)
    config = path / "config.json" if os.path.isdir(path) else path
    if os.path.isfile(config):
        try:
            data = read_json(config, "drafter config", CONFIG_MAX_BYTES)
        except ValueError as exc:
            raise PlanInputError(f"drafter {model}: unreadable config.json ({exc})") from None
        return drafter_from_config(data, str(path), f"local {config}", None if kind == "draft_model" else kind)
    names = sorted({s.name for s in registry.values()})
    raise PlanInputError(f"unknown drafter {model!r} for speculative method {method}: not in the drafter "
                         f"registry ({', '.join(names) or 'none'}) and not a local directory with config.json")


@dataclass(frozen=True)
class KVType:
    """One KV spec of a rank: its layers, block size after page unification, page bytes, and the sliding
    window of a SlidingWindowSpec (0: full attention)."""

    layers: int
    block_size: int
    page_bytes: int
    window: int = 0

    def blocks_per_request(self, max_model_len: int, in_flight_tokens: int) -> int:
        """Full attention: cdiv(max_model_len, block); sliding window (kv_cache_interface.py SlidingWindowSpec
        max_admission_blocks_per_request): cdiv(min(window - 1 + in-flight tokens, max_model_len), block) + 1."""
        if not self.window:
            return math.ceil(max_model_len / self.block_size)
        return math.ceil(min(self.window - 1 + in_flight_tokens, max_model_len) / self.block_size) + 1


def grouped_layout(types: list[KVType], mamba_layers: int, mamba_page: int) -> tuple[int, int, list[int], int]:
    """(page bytes, group size, groups per attention type, mamba groups) the way vLLM 0.26 groups them
    (kv_cache_utils.py unify_kv_cache_spec_page_size + _get_kv_cache_groups_uniform_page_size)."""
    page = max([t.page_bytes for t in types] + [mamba_page])
    counts = [t.layers for t in types if t.layers] + ([mamba_layers] if mamba_layers else [])
    lo, hi = min(counts), max(counts)
    size = hi if hi < lo * 1.5 else lo
    return page, size, [math.ceil(t.layers / size) for t in types], math.ceil(mamba_layers / size)


def unified_types(types: list[KVType], mamba_page: int) -> list[KVType]:
    """Raise the block size of attention specs whose page is smaller than the largest one (pages that do
    not divide it keep their block size and are padded)."""
    page = max([t.page_bytes for t in types] + [mamba_page])
    out = []
    for t in types:
        ratio = page // t.page_bytes if t.page_bytes and page % t.page_bytes == 0 else 1
        out.append(KVType(t.layers, t.block_size * ratio, page, t.window))
    return out


@dataclass(frozen=True)
class DraftCapacity:
    """vLLM's capacity with a drafter's own KV spec: what "GPU KV cache size" and concurrency would log."""

    block_size: int
    page_bytes: int
    group_size: int
    attention_groups: int
    mamba_groups: int
    num_blocks: int
    tokens: int
    max_concurrency: float
    legacy_tokens: int


def vllm_capacity_with_drafter(types: list[KVType], mamba_layers: int, mamba_page: int, mamba_blocks: int,
                               available_bytes: int, max_model_len: int, in_flight_tokens: int = 0) -> DraftCapacity:
    """Blocks, tokens and max concurrency of a rank whose attention layers form several KV specs."""
    types = [t for t in types if t.layers]
    unified = unified_types(types, mamba_page)
    page, size, groups, mamba_groups = grouped_layout(unified, mamba_layers, mamba_page)
    num_blocks = max(0, available_bytes) // (page * size)
    per_request = sum(g * t.blocks_per_request(max_model_len, in_flight_tokens) for g, t in zip(groups, unified))
    per_request += mamba_groups * mamba_blocks
    concurrency = num_blocks / per_request if per_request else 0.0
    all_groups = sum(groups) + mamba_groups
    smallest = min(t.block_size for t in unified)
    return DraftCapacity(unified[0].block_size, page, size, sum(groups), mamba_groups, num_blocks,
                         int(concurrency * max_model_len), concurrency, num_blocks // all_groups * smallest)


def drafter_of(cfg: ServeConfig) -> DrafterSpec | None:
    """The separate drafter a configuration runs, or None (no speculation, MTP head, n-gram); an unknown
    drafter or method is a PlanInputError."""
    if cfg.drafter is None and (cfg.speculative_method or "").lower() in MTP_METHODS + NO_MODEL_METHODS:
        return None
    return resolve_drafter(cfg.speculative_method or "draft_model", cfg.drafter or None)


def drafter_capacity(target: ModelSpec, cfg: ServeConfig, drafter: DrafterSpec, layout: Any, full: int,
                     linear: int, available_bytes: int, max_model_len: int, in_flight_tokens: int) -> DraftCapacity:
    """vLLM capacity of a rank whose drafter layers have their own KV spec beside the target's `layout`
    (block size already aligned to the GDN state by vllm_kv.vllm_layout). Sliding-window drafter layers hold
    at most their window plus the tokens in flight (`in_flight_tokens`: max_num_batched_tokens here;
    VllmConfig.max_in_flight_tokens may count more under async scheduling)."""
    from doctor.planner.state import kv_bytes_per_token_per_layer

    block = layout.block_size
    draft_page = block * drafter.kv_bytes_per_token_per_layer(target, cfg)
    window = drafter.sliding_window if drafter.sliding_layers else 0
    sliding = drafter.sliding_layers if window else 0
    types = [KVType(full, block, block * kv_bytes_per_token_per_layer(target, cfg)),
             KVType(drafter.num_layers - sliding, block, draft_page),
             KVType(sliding, block, draft_page, window)]
    mamba_blocks = (2 if cfg.prefix_caching_on else 1) + cfg.mtp_tokens
    mamba_page = layout.page_bytes if linear else 0
    return vllm_capacity_with_drafter(types, linear, mamba_page, mamba_blocks, available_bytes, max_model_len,
                                      in_flight_tokens)


def sglang_drafter_cell_bytes(drafter: DrafterSpec, method: str, target_cell: int, target_full_layers: int,
                              target: ModelSpec, cfg: ServeConfig, rules: SglangRules) -> int:
    """Bytes per token SGLang adds to the target's cell (`target_cell` over `target_full_layers` layers) for the
    drafter's KV under --speculative-algorithm `method`; 0 when the drafter's pool is sized outside
    --mem-fraction-static (its algorithm not in rules.drafter_cell_methods) or the stage has no full layers."""
    kind = method.lower()
    if kind not in rules.drafter_cell_methods or target_full_layers <= 0 or drafter.num_layers <= 0:
        return 0
    if kind == "dflash":
        if rules.dflash_own_cell:
            return drafter.num_layers * drafter.kv_bytes_per_token_per_layer(target, cfg)
        total = target_full_layers + drafter.num_layers
        return (target_cell * total + target_full_layers - 1) // target_full_layers - target_cell
    return int(target_cell * (1 + drafter.num_layers / target_full_layers)) - target_cell
