"""Rules the engines' recipes encode, judged on the selected profile's command line (doctor/recipe_rules.py)."""

from __future__ import annotations

import re

from doctor.context import CheckContext
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn


def _flags(ctx: CheckContext) -> dict[str, str] | None:
    """The profile's engine flags as `--flag: value` (read from its Deployment), with a --pp given on the command
    line winning."""
    from doctor.profile_plan import profile_deployment

    profile = ctx.profile
    if profile is None or not hasattr(profile, "render"):
        return None
    flags = profile_deployment(profile).option_texts()
    if ctx.options.get("pp"):
        flags["--pipeline-parallel-size" if profile.backend == "vllm" else "--pp-size"] = str(ctx.options["pp"])
    return flags


@check("QD-RECIPE-001", "Speculative decoding not combined with pipeline parallel", category="profile",
       severity="high")
def speculative_without_pp(ctx: CheckContext) -> Outcome:
    """MTP / speculative decoding does not start (or corrupts output) under pipeline parallelism in vLLM; SGLang
    accepts only EAGLE / NEXTN there (vllm#49355, #52069, #57755; recipes b76bd29; sglang validation_hook.py)."""
    from doctor.recipe_rules import SOURCE, speculative_with_pp

    flags = _flags(ctx)
    if flags is None:
        return skip("no profile selected")
    problem = speculative_with_pp(ctx.profile.backend, flags)
    if problem:
        return fail(f"profile {ctx.profile.name}: {problem}",
                    fix=["Drop the speculative decoding flags or use tensor parallelism instead of pipeline "
                         f"parallelism ({SOURCE})."])
    return ok(f"profile {ctx.profile.name} does not combine speculative decoding with pipeline parallelism")


@check("QD-RECIPE-002", "Tool-call parser reads Qwen3.5's format", category="profile", severity="high")
def tool_call_parser(ctx: CheckContext) -> Outcome:
    """Qwen3.5 / Qwen3.6 write XML-style tool calls that qwen3_coder parses; JSON parsers (hermes, qwen25,
    qwen3_json) lose every call, and SGLang has no qwen3_xml (vLLM tool_parsers, SGLang parser_names)."""
    from doctor.recipe_rules import TOOL_PARSER_SOURCE, tool_parser_issue

    flags = _flags(ctx)
    if flags is None:
        return skip("no profile selected")
    parser = flags.get("--tool-call-parser")
    if not parser:
        return skip(f"profile {ctx.profile.name} sets no tool-call parser")
    problem = tool_parser_issue(ctx.profile.backend, flags)
    if problem:
        return fail(f"profile {ctx.profile.name}: {problem}",
                    fix=[f"Use --tool-call-parser qwen3_coder ({TOOL_PARSER_SOURCE})."])
    return ok(f"profile {ctx.profile.name}: --tool-call-parser {parser} reads Qwen3.5's tool calls")


@check("QD-RECIPE-003", "Concurrency limit within the Mamba cache blocks", category="profile", severity="high",
       backends=("vllm",))
def mamba_concurrency_limit(ctx: CheckContext) -> Outcome:
    """vLLM runs at most one sequence per Mamba cache block of Qwen3.5's GDN layers; from 0.19.0 it refuses to
    start when --max-num-seqs exceeds them with FULL CUDA graphs (the default FULL_AND_PIECEWISE mode; not in eager
    mode or with cudagraph_mode PIECEWISE / NONE), earlier it caps (vllm#38270, #37416, #49064)."""
    from doctor.errors import DoctorError
    from doctor.profile_plan import plan_profile
    from doctor.recipe_rules import MAMBA_SOURCE, mamba_concurrency
    from doctor.suggest import machine_from_facts

    profile = ctx.profile
    if profile is None or not hasattr(profile, "render") or profile.backend != "vllm" or profile.hardware.device == "cpu":
        return skip("no vLLM GPU profile selected")
    machine = machine_from_facts(ctx.facts) if ctx.facts.knows("gpus") else None
    version = ctx.facts.package_version("vllm")
    try:
        hardware = machine.hardware(max(1, profile.hardware.gpu_count)) if machine else None
        planned = plan_profile(profile, hardware, version)
    except DoctorError as exc:
        return skip(f"profile {profile.name} cannot be planned here: {exc}")
    flags = _flags(ctx) or {}
    seqs = planned.config.max_num_seqs or _default_max_num_seqs(version, planned)
    block = planned.ranks[0].block_size if planned.ranks else 0
    if not seqs or not block:
        return skip("the concurrency limit or the block size is not known for this version")
    compilation = flags.get("--compilation-config", "").upper()
    full = not planned.config.enforce_eager and ("FULL" in compilation or not re.search(r"PIECEWISE|NONE", compilation))
    verdict, why = mamba_concurrency(version or planned.config.backend_version, int(seqs), planned.kv_tokens // block,
                                     full)
    where = f"profile {profile.name} on {planned.hardware}: {why}"
    if verdict == "refuse":
        return fail(where, fix=[f"--max-num-seqs {planned.kv_tokens // block} or lower ({MAMBA_SOURCE})."])
    if verdict == "clamp":
        return warn(where, fix=[f"Set --max-num-seqs {planned.kv_tokens // block} to say what runs ({MAMBA_SOURCE})."])
    return ok(where)


def _default_max_num_seqs(version: str | None, planned) -> int | None:
    """`vllm serve`'s own max_num_seqs for this GPU and version (its get_batch_defaults tiers)."""
    from doctor.planner.engine_defaults import vllm_batch_defaults_of

    gpu = planned.hardware.gpu
    found = vllm_batch_defaults_of(version or planned.config.backend_version, gpu.usable_bytes, gpu.name,
                                   gpu.capability)
    return found[1] if found else None
