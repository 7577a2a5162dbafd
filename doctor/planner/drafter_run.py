"""The speculative drafter's dummy run inside vLLM's profile run, tensor by tensor (one rank of the last stage).

profile_run's `_dummy_run(max_num_tokens, is_profile=True)` runs the drafter right after the target's dummy
forward, in the same frame, so the target's outputs stay alive while the drafter runs; its peak is a phase of its
own beside the target's forward and the sampler's run, and the profile's peak is the largest of them
(overhead.peak_activation). Read in the 0.20.1, 0.22.0 and 0.26.0 wheels (the V1 runner) and the 0.32.0 CPU build
and the 0.29.0, 0.30.0, 0.31.0 and 0.34.0 wheels (the V2 runner, v1/worker/gpu/), each rule at its function:

- Held from the target (V1: v1/worker/gpu_model_runner.py _dummy_run `outputs = self.model(...)`,
  `hidden_states, _ = outputs` then `self.drafter.dummy_run(num_tokens, ...)`; V2: v1/worker/gpu/model_runner.py
  _dummy_run, `hidden_states` / `aux_hidden_states` of execute_model_state passed to speculator.propose with
  dummy_run=True): the final hidden states [T, H] and, for a drafter fed by target layers (EAGLE3 / DFlash:
  use_aux_hidden_state_outputs), one [T, H] per aux layer (models/interfaces.py _maybe_add_hidden_state appends
  `hidden_states + residual`, a new tensor, after each layer in aux_hidden_state_layers: DFlash's
  target_layer_ids + 1 from 0.22, EAGLE3's eagle_aux_hidden_state_layer_ids or (2, L / 2, L - 3)). The aux
  states are made inside the target's forward, so its later pieces hold them too (aux_hidden_bytes, added to the
  forward's peak by overhead.forward_peak: every aux layer of these drafters lies before the model's last
  GDN -> attention piece, where the largest piece recurs). The fused-MoE workspace the modular kernel keeps
  (moe.moe_workspace persistent) is held as well.
- V1 EAGLE / EAGLE3 / MTP (v1/spec_decode/llm_base_proposer.py dummy_run): the drafter model over all T tokens
  (num_speculative_tokens passes one after another, not at once). MTP (models/qwen3_5_mtp.py
  Qwen3_5MultiTokenPredictor.forward): embedding, the two pre-fc norms, their concatenation and `fc` feed one
  decoder layer of the target's kind (full attention + MoE): its moments are the target's attention piece and MoE
  block with the fc output as residual (mtp_moments). A Llama / Qwen3-style drafter layer (llama_eagle3.py,
  qwen3_dflash.py): the residual, the layer input (EAGLE3's first layer: embeddings and hidden states
  concatenated, 2 Hd), qkv_proj's output and the attention output; or the MLP's gate_up [T, 2 I / TP] and
  SiluAndMul's output [T, I / TP] beside the residual and the normed input (dense_layer_moments).
- V1 DFlash (v1/spec_decode/dflash.py dummy_run, the same in 0.20.1-0.26.0 and the 0.32.0 CPU build):
  `precompute_and_store_context_kv(self.hidden_states[:T], ...)` over all T context tokens, then the query forward
  over min(T, max_num_seqs x (1 + k)) tokens (max_query_tokens) without logits. The precompute
  (models/qwen3_dflash.py _project_context_kv / precompute_and_store_context_kv) holds at its peak the normed
  context [T, Hd] (torch.empty_like), the fused K/V projection of every drafter layer [T, L x 2 x kv_rank x hd]
  (one F.linear) and its `.permute(2, 1, 0, 3, 4).contiguous()` copy of the same size; the later K norm
  (empty_like of K) holds less.
- V2 DFlash (v1/worker/gpu/spec_decode/dflash/speculator.py propose, dummy_run and skip_attn): `torch.cat` of the
  aux states [T, n H] into `combine_hidden_states` (fc, [T, Hd], held to the end up to 0.33, dropped after its
  copy from 0.34: dflash_holds_combined), the same precompute over T, then _generate_draft over num_reqs x (1 + k)
  query tokens (num_reqs: v2_dummy_requests; the speculator's input buffers cut them at T), whose sample_draft
  computes the draft logits of num_reqs x k rows over the vocabulary (speculator.py compute_draft_logits; greedy:
  argmax) -- gathered over the TP group as the target's are: [rows, V / TP] + [TP x rows, V / TP] + the [rows, V]
  copy at TP > 1 (LogitsProcessor). At vLLM's defaults on a 32 GB GPU (2,048 tokens, 256 sequences) and k = 15,
  0.29 / 0.30 sample 256 x 15 rows: 1.78 GiB of BF16 logits, the profile's peak; 0.31+ cut the batch to 128
  requests.
- V2 EAGLE / EAGLE3 / MTP (spec_decode/autoregressive/speculator.py 0.29-0.31, target_dependent_ar/ in 0.32:
  propose): EAGLE3 combines its aux states
  as DFlash does; the draft prefill runs the drafter over T tokens, then samples num_reqs = min(T, max_num_seqs)
  rows (num_reqs x V logits) while the drafter's output [T, Hd] lives; the decode steps after it run num_reqs
  tokens each.
Not modelled: multimodal drafters' embeddings, draft_sample_method "probabilistic" (its draft-logits cache is a
buffer made before the profile), tree drafting.
"""

from __future__ import annotations

from packaging.version import Version

from doctor.models.spec import ModelSpec, dtype_bytes
from doctor.planner.config import ASSUMED_VLLM_VERSION, ServeConfig
from doctor.planner.drafters import DrafterSpec
from doctor.planner.forward import ATTENTION, Moment, Tensor, attention_layer, moe_tensors, residual, width
from doctor.planner.moe import MoeWorkspace

AUX_SOURCE = "models/interfaces.py _maybe_add_hidden_state"
DFLASH_SOURCE = "models/qwen3_dflash.py precompute_and_store_context_kv"
V1_RUNNER_SOURCE = "v1/worker/gpu_model_runner.py _dummy_run"
V2_RUNNER_SOURCE = "v1/worker/gpu/model_runner.py _dummy_run"
DRAFT_LAYER_SOURCE = "models/llama_eagle3.py / qwen3_dflash.py decoder layer"
MTP_SOURCE = "models/qwen3_5_mtp.py Qwen3_5MultiTokenPredictor.forward"
SPECULATOR_SOURCE = "v1/worker/gpu/spec_decode/speculator.py sample_draft"
AUX_METHODS = ("eagle3", "dflash")


DrafterRun = Moment   # the drafter phase of profile_run: its moment and the tensors alive there


def aux_hidden_layers(drafter: DrafterSpec | None) -> int:
    """Target hidden states the drafter takes besides the last one (EAGLE3 / DFlash); 0 for MTP and EAGLE."""
    return drafter.aux_hidden_states if drafter is not None and drafter.method in AUX_METHODS else 0


def aux_hidden_bytes(spec: ModelSpec, drafter: DrafterSpec | None, tokens: int) -> int:
    """The aux hidden states [T, H] each that the target's forward makes and keeps for the drafter."""
    return aux_hidden_layers(drafter) * tokens * spec.hidden_size * int(dtype_bytes(spec.dtype))


def dense_layer_moments(drafter: DrafterSpec, tp: int, first_layer: bool) -> list[tuple[Tensor, ...]]:
    """A drafter decoder layer's two moments (attention, MLP) per token, on one rank."""
    hd, heads = drafter.head_dim, drafter.num_heads
    q = heads * hd // tp
    kv = max(1, drafter.num_kv_heads // tp) * hd
    wide = 2 if drafter.method == "eagle3" and first_layer else 1
    stream = (Tensor("drafter residual", drafter.hidden_size, DRAFT_LAYER_SOURCE),)
    attention = (*stream, Tensor("drafter layer input", wide * drafter.hidden_size, DRAFT_LAYER_SOURCE),
                 Tensor("drafter qkv_proj output", q + 2 * kv, DRAFT_LAYER_SOURCE),
                 Tensor("drafter attention output", q, DRAFT_LAYER_SOURCE))
    inter = drafter.intermediate_size // tp
    mlp = (*stream, Tensor("drafter post_attention_layernorm output", drafter.hidden_size, DRAFT_LAYER_SOURCE),
           Tensor("drafter gate_up_proj output", 2 * inter, DRAFT_LAYER_SOURCE),
           Tensor("drafter SiluAndMul output", inter, DRAFT_LAYER_SOURCE))
    return [attention, mlp]


def mtp_moments(spec: ModelSpec, tp: int, compiled: bool) -> list[tuple[Tensor, ...]]:
    """The checkpoint's MTP layer per token: its attention piece (the fc output as residual) and its MoE block."""
    piece = (residual("MTP fc output (the layer's residual)", spec), *attention_layer(spec, tp).made)
    return [piece, moe_tensors(spec, tp, compiled, kinds=(ATTENTION,))]


def drafter_forward_moments(spec: ModelSpec, cfg: ServeConfig, drafter: DrafterSpec | None) -> list[tuple[Tensor, ...]]:
    """The drafter model's moments per token (MTP head or a separate drafter)."""
    if drafter is None:
        return mtp_moments(spec, cfg.tp, not cfg.enforce_eager)
    return dense_layer_moments(drafter, cfg.tp, first_layer=True)


def dflash_precompute_width(drafter: DrafterSpec, tp: int) -> tuple[Tensor, ...]:
    """DFlash's context K/V precompute per context token: normed input, the fused K/V GEMM and its contiguous copy."""
    kv = 2 * drafter.num_layers * max(1, drafter.num_kv_heads // tp) * drafter.head_dim
    return (Tensor("DFlash normed context states", drafter.hidden_size, DFLASH_SOURCE),
            Tensor("DFlash fused K/V projection of every layer", kv, DFLASH_SOURCE),
            Tensor("DFlash K/V layer-major contiguous copy", kv, DFLASH_SOURCE))


def _release(cfg: ServeConfig) -> Version:
    return Version(Version(cfg.backend_version or ASSUMED_VLLM_VERSION).base_version)


def v2_dummy_requests(cfg: ServeConfig, tokens: int, seqs: int, query_per_req: int) -> int:
    """Requests of the V2 runner's profile dummy batch with a speculator of `query_per_req` query tokens a request
    (v1/worker/gpu/model_runner.py _dummy_run): min(T, max_num_seqs); from 0.31.0 also at most
    T // query_per_req (read in 0.29.0, 0.30.0, 0.31.0, 0.32.0 and 0.34.0)."""
    requests = min(tokens, seqs)
    return min(requests, tokens // query_per_req) if _release(cfg) >= Version("0.31.0") else requests


def dflash_holds_combined(cfg: ServeConfig) -> bool:
    """Whether the V2 DFlash speculator keeps its combined context states through the dummy run: a local of
    propose up to 0.33 (read in 0.32.0); 0.34.0 combines them inside _store_hidden_states, which copies them into
    its buffer and drops them on return."""
    return _release(cfg) < Version("0.34.0")


def logits_rows_bytes(spec: ModelSpec, rows: int, tp: int) -> int:
    """Draft logits over `rows` rows, gathered over the TP group at TP > 1 ((2 + 1 / TP) x rows x V at once)."""
    factor = 1.0 if tp == 1 else 2 + 1 / tp
    return int(rows * spec.vocab_size * factor * dtype_bytes(spec.dtype))


Sized = list[tuple[str, int, str]]
Candidate = tuple[str, Sized]


def _sized(tensors: tuple[Tensor, ...], count: int, act: int) -> Sized:
    return [(t.name, t.width * count * act, t.source) for t in tensors if t.width]


def _dflash_candidates(spec: ModelSpec, cfg: ServeConfig, drafter: DrafterSpec, tokens: int, seqs: int,
                       v1_runner: bool) -> list[Candidate]:
    """DFlash's moments after the target's forward: V2's combine, the context K/V precompute over all tokens, the
    query forward, V2's draft logits."""
    act, k = int(dtype_bytes(spec.dtype)), max(1, cfg.mtp_tokens)
    query_reqs = v2_dummy_requests(cfg, tokens, seqs, 1 + k)
    # V2: the query slices of the speculator's input buffers stop at max_num_batched_tokens (0.29 / 0.30 ask more)
    query = min(tokens, (seqs if v1_runner else query_reqs) * (1 + k))
    out: list[Candidate] = []
    combined: Sized = []
    if not v1_runner and aux_hidden_layers(drafter):
        fc_out = ("combined context states (fc output)", tokens * drafter.hidden_size * act,
                  "dflash/speculator.py propose")
        out.append(("DFlash combine_hidden_states (torch.cat of the aux states, fc)",
                    [("torch.cat of the aux states", aux_hidden_bytes(spec, drafter, tokens),
                      "dflash/speculator.py propose"), fc_out]))
        combined = [fc_out] if dflash_holds_combined(cfg) else []
    out.append(("DFlash context K/V precompute",
                combined + _sized(dflash_precompute_width(drafter, cfg.tp), tokens, act)))
    layer = max(dense_layer_moments(drafter, cfg.tp, first_layer=False), key=width)
    out.append((f"DFlash query forward over {query} tokens", combined + _sized(layer, query, act)))
    if not v1_runner:
        rows = query_reqs * k
        out.append((f"DFlash draft logits over {rows} rows",
                    combined + [("draft hidden states sampled", rows * drafter.hidden_size * act, SPECULATOR_SOURCE),
                                ("draft logits", logits_rows_bytes(spec, rows, cfg.tp), SPECULATOR_SOURCE)]))
    return out


def _autoregressive_candidates(spec: ModelSpec, cfg: ServeConfig, drafter: DrafterSpec | None, tokens: int,
                               seqs: int, v1_runner: bool, workspace: MoeWorkspace) -> list[Candidate]:
    """An MTP head's or an EAGLE / EAGLE3 / draft model's moments after the target's forward: V2's EAGLE3 combine,
    the drafter's forward over all tokens (its two moments), V2's draft prefill logits."""
    act = int(dtype_bytes(spec.dtype))
    hd = drafter.hidden_size if drafter else spec.hidden_size
    method = "mtp" if drafter is None else drafter.method
    out: list[Candidate] = []
    combined: Sized = []
    if not v1_runner and aux_hidden_layers(drafter):
        fc_out = ("combined hidden states (fc output)", tokens * hd * act, "target_dependent_ar/speculator.py propose")
        cat = ("torch.cat of the aux states", aux_hidden_bytes(spec, drafter, tokens),
               "target_dependent_ar/speculator.py propose")
        out.append(("EAGLE3 combine_hidden_states", [cat, fc_out]))
        combined = [fc_out]
    source = MTP_SOURCE if drafter is None else DRAFT_LAYER_SOURCE
    transient = ([("the experts' own workspaces for the call", workspace.peak - workspace.persistent,
                   "overhead.moe_workspace")] if drafter is None else [])
    piece, block = drafter_forward_moments(spec, cfg, drafter)
    out.append((f"{method} drafter forward over {tokens} tokens ({source})", combined + _sized(piece, tokens, act)))
    out.append((f"{method} drafter's {'MoE block' if drafter is None else 'MLP'} over {tokens} tokens",
                combined + _sized(block, tokens, act) + transient))
    if not v1_runner:
        rows = min(tokens, seqs)
        out.append((f"{method} draft prefill logits over {rows} rows",
                    combined + [("drafter output", tokens * hd * act, "target_dependent_ar/speculator.py"),
                                ("draft logits", logits_rows_bytes(spec, rows, cfg.tp), SPECULATOR_SOURCE)]))
    return out


def drafter_run(spec: ModelSpec, cfg: ServeConfig, drafter: DrafterSpec | None, tokens: int, seqs: int,
                v1_runner: bool, workspace: MoeWorkspace) -> DrafterRun | None:
    """The drafter phase of profile_run over `tokens` (max_num_batched_tokens) with `seqs` (max_num_seqs) and the
    MoE layers' `workspace` (moe.moe_workspace over the tokens): what it holds of the target's beside its largest
    moment; None without a drafter model forward (no speculation, n-gram and the other model-free methods)."""
    if not cfg.mtp_tokens or (drafter is None and not cfg.uses_mtp_head):
        return None
    act = int(dtype_bytes(spec.dtype))
    held = [("fused-MoE workspace the modular kernel keeps", workspace.persistent,
             "fused_moe/modular_kernel.py _allocate_buffers"),
            ("target hidden states held through the drafter", tokens * spec.hidden_size * act,
             V1_RUNNER_SOURCE if v1_runner else V2_RUNNER_SOURCE),
            ("target aux hidden states for the drafter", aux_hidden_bytes(spec, drafter, tokens), AUX_SOURCE)]
    if drafter is not None and drafter.method == "dflash":
        candidates = _dflash_candidates(spec, cfg, drafter, tokens, seqs, v1_runner)
    else:
        candidates = _autoregressive_candidates(spec, cfg, drafter, tokens, seqs, v1_runner, workspace)
    moment, chosen = max(candidates, key=lambda c: sum(size for _, size, _ in c[1]))
    return DrafterRun(moment, tuple(t for t in held + chosen if t[1]))


__all__ = ["DrafterRun", "aux_hidden_layers", "aux_hidden_bytes", "dense_layer_moments", "mtp_moments",
           "drafter_forward_moments", "dflash_precompute_width", "v2_dummy_requests", "dflash_holds_combined",
           "logits_rows_bytes", "drafter_run"]
