"""Every TP x PP x DP (x EP) layout of a GPU set that the engines accept, planned and ranked.

Candidates use all GPUs: TP from the sizes that pass every hard divisibility rule (KV / GDN heads, FP8
block vs moe_intermediate_size / TP: divisibility.py), PP from 1 to the layer count, DP the rest; expert
parallelism is tried wherever TP x DP > 1 on a MoE model (vLLM fused_moe: experts over TP x DP ranks).
Ranking: layouts that fit first, then by total requests at max-model-len (per-replica concurrency x DP),
then by fewer pipeline stages and smaller TP (less communication).
What the user asked for comes first: an explicit --dp N (N > 1) without --tp plans exactly that layout, what it
leaves unsaid at the engine's default (PP 1 unless --pp, expert parallelism only with --enable-expert-parallel, as
vLLM's ParallelConfig and SGLang's ServerArgs default them) and TP = GPUs / (PP x DP); --enable-expert-parallel
alone plans the best layout with EP. The others follow, best first; a GPU the asked layout leaves idle is noted.
"""

from __future__ import annotations

from doctor.models.spec import ModelSpec
from doctor.planner.config import ServeConfig
from doctor.planner.divisibility import check_divisibility
from doctor.planner.hardware import Hardware
from doctor.planner.plan import Plan, plan

MAX_LAYOUTS = 64


def candidate_layouts(spec: ModelSpec, count: int, cfg: ServeConfig) -> list[ServeConfig]:
    """Configurations (TP, PP, DP, EP) using all `count` GPUs that pass every hard rule."""
    out = []
    pps = [cfg.pp] if cfg.pp > 1 else range(1, min(count, spec.num_layers) + 1)
    for pp in pps:
        if count % pp:
            continue
        for tp in range(1, count // pp + 1):
            if (count // pp) % tp:
                continue
            dp = count // pp // tp
            eps = [False, True] if spec.moe and tp * dp > 1 else [False]
            for ep in eps:
                c = cfg.with_(tp=tp, pp=pp, dp=dp, expert_parallel=ep)
                if all(r.ok or r.severity != "fail" for r in check_divisibility(spec, c)):
                    out.append(c)
    return out[:MAX_LAYOUTS]


def _score(p: Plan) -> tuple:
    total_requests = p.max_concurrency * p.config.dp
    return (not p.fits, -total_requests, p.config.pp, p.config.tp, p.config.expert_parallel)


def asks_layout(cfg: ServeConfig) -> bool:
    """Whether the configuration names a layout without --tp: --dp > 1 or --enable-expert-parallel (both off by
    default)."""
    return cfg.dp > 1 or cfg.expert_parallel


def _is_asked(asked: ServeConfig, c: ServeConfig) -> bool:
    """Whether layout `c` is the one `asked` names: its DP, PP and EP as given (or their defaults) where DP is
    given; any layout with EP where EP alone is."""
    if asked.dp == 1:
        return c.expert_parallel
    return (c.dp, c.pp, c.expert_parallel) == (asked.dp, asked.pp, asked.expert_parallel)


def plan_layouts(spec: ModelSpec, hardware: Hardware, cfg: ServeConfig) -> list[Plan]:
    """Plans of every accepted layout of `hardware`, best first; the layout the configuration asks for
    (asks_layout) first of all, planned even where a hard rule rejects it (its plan then says why)."""
    plans = sorted((plan(spec, hardware, c) for c in candidate_layouts(spec, hardware.count, cfg)), key=_score)
    if not asks_layout(cfg):
        return plans
    asked = [p for p in plans if _is_asked(cfg, p.config)]
    if asked:
        first = asked[0]
    else:
        tp = max(1, hardware.count // (cfg.pp * cfg.dp))
        first = plan(spec, hardware, cfg.with_(tp=tp))
    idle = hardware.count - first.config.world_size
    if idle > 0:
        first.notes.append(f"TP {first.config.tp} x PP {first.config.pp} x DP {first.config.dp} uses "
                           f"{first.config.world_size} of the {hardware.count} GPUs: {idle} stay idle")
    return [first] + [p for p in plans if p is not first]
