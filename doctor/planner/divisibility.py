"""Parallelism divisibility rules, each with the exact error text the backend raises.

Sources (vLLM 0.32 wheel):
- attention heads vs TP: vllm/config/model.py verify_with_parallel_config
  "Total number of attention heads (16) must be divisible by tensor parallel size (3)." (vllm#414)
- KV heads / GDN heads vs TP: vllm/distributed/utils.py ensure_divisibility "{a} is not divisible by {b}"
  (QKVParallelLinear: divide(tp, kv_heads) when tp >= kv_heads, else divide(kv_heads, tp);
  GDN: divide(num_k_heads, tp), divide(num_v_heads, tp)). SGLang qwen3_5.py asserts without a message.
- FP8 block vs moe_intermediate_size / TP: quantization/utils/fp8_utils.py validate_fp8_block_shape_moe
  "The output_size of gate's and up's weight = 64 is not divisible by weight quantization block_n = 128."
  (vllm#25292 Qwen3-30B-A3B-FP8 TP=4; vllm PR#52915 Qwen3.6-35B-A3B-FP8 TP=8; sglang#19045).
- experts vs EP: fused_moe/expert_map_manager.py gives the first ranks one extra expert when
  num_experts % ep_size != 0 (allowed, unbalanced).
"""

from __future__ import annotations

from dataclasses import dataclass

from doctor.deployment.table import option
from doctor.models.spec import ModelSpec
from doctor.planner.config import ServeConfig


@dataclass(frozen=True)
class RuleResult:
    """One rule applied to one configuration."""

    rule: str
    ok: bool
    message: str                # on failure: the backend's own error text
    fix: str = ""
    severity: str = "fail"      # fail: the backend refuses to start; warn: it starts, unbalanced


def _divides(a: int, b: int) -> bool:
    return b > 0 and a % b == 0


def check_divisibility(spec: ModelSpec, cfg: ServeConfig) -> list[RuleResult]:
    """All rules for (model, parallel config); failures carry the backend's error text."""
    tp, a = cfg.tp, spec.attention
    out = [RuleResult(
        "attention-heads-tp", _divides(a.num_heads, tp),
        f"Total number of attention heads ({a.num_heads}) must be divisible by tensor parallel size ({tp}).",
        "pick a TP that divides the attention heads; scale further with DP/EP")]
    kv = a.num_kv_heads
    if tp >= kv:
        out.append(RuleResult("kv-heads-tp", _divides(tp, kv), f"{tp} is not divisible by {kv}",
                              f"with {kv} KV heads, TP must be a multiple of {kv} once TP >= {kv}"))
    else:
        out.append(RuleResult("kv-heads-tp", _divides(kv, tp), f"{kv} is not divisible by {tp}",
                              f"TP must divide the {kv} KV heads"))
    if tp > kv and _divides(tp, kv):
        out.append(RuleResult(
            "kv-heads-replicated", False,
            f"TP={tp} > {kv} KV heads: each KV head is replicated on {tp // kv} ranks "
            f"(KV cache per token is not reduced beyond TP={kv})",
            "expected for this model; prefer DP or EP over TP > KV heads for KV capacity (sglang#10852)",
            severity="warn"))
    g = spec.linear_attention
    if g is not None:
        for label, heads in (("key", g.num_key_heads), ("value", g.num_value_heads)):
            out.append(RuleResult(f"gdn-{label}-heads-tp", _divides(heads, tp),
                                  f"{heads} is not divisible by {tp}",
                                  f"TP must divide the {heads} Gated DeltaNet {label} heads"))
    m = spec.moe
    if m is not None and cfg.expert_parallel:
        ep = cfg.ep_size
        out.append(RuleResult("experts-ep", ep <= m.num_experts,
                              f"expert parallel size {ep} exceeds the {m.num_experts} experts",
                              "use fewer EP ranks"))
        if ep <= m.num_experts and m.num_experts % ep:
            out.append(RuleResult("experts-ep-balance", False,
                                  f"{m.num_experts} experts over {ep} EP ranks: some ranks hold "
                                  f"{m.num_experts // ep + 1}, others {m.num_experts // ep}",
                                  "choose an EP size that divides the experts", severity="warn"))
    q = spec.quantization
    if q.method == "fp8" and q.weight_block_size and m is not None:
        block_n, block_k = q.weight_block_size
        moe_tp = 1 if cfg.expert_parallel else tp
        per_part = m.intermediate_size // moe_tp   # vLLM divides first (divide() fails on a remainder)
        ok_n = _divides(m.intermediate_size, moe_tp) and per_part % block_n == 0
        moe_fix = (f"use TP <= {max(1, m.intermediate_size // block_n)} for the experts, or "
                   f"{option('expert_parallel', 'vllm')} (experts are then not split), or the BF16 checkpoint")
        out.append(RuleResult(
            "fp8-block-moe-tp", ok_n,
            f"The output_size of gate's and up's weight = {per_part} is not divisible by "
            f"weight quantization block_n = {block_n}.", moe_fix))
        if ok_n and moe_tp > 1 and per_part % block_k:
            out.append(RuleResult(
                "fp8-block-moe-tp-k", False,
                f"The input_size of down's weight = {per_part} is not divisible by "
                f"weight quantization block_k = {block_k}.", moe_fix))
        shared = m.shared_expert_intermediate_size // tp
        if shared and "shared_experts" in q.modules and shared % block_n:
            out.append(RuleResult(
                "fp8-block-shared-expert-tp", False,
                f"Weight output_partition_size = {shared} is not divisible by "
                f"weight quantization block_n = {block_n}.",
                f"use TP <= {max(1, m.shared_expert_intermediate_size // block_n)} or the BF16 checkpoint"))
    return out


def valid_tensor_parallel_sizes(spec: ModelSpec, upto: int = 64) -> list[int]:
    """TP sizes that pass every hard rule (e.g. [1, 2, 4, 8, 16] for Qwen3.5-35B-A3B BF16)."""
    return [t for t in range(1, upto + 1)
            if all(r.ok or r.severity != "fail" for r in check_divisibility(spec, ServeConfig(tp=t)))]
