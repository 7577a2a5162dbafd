"""Rules the engines' recipes encode, judged on the selected profile's command line (doctor/recipe_rules.py)."""

from __future__ import annotations

from doctor.context import CheckContext
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip


def _flags(ctx: CheckContext) -> dict[str, str] | None:
    """The profile's backend flags as `--flag: value`, with a --pp given on the command line winning."""
    from doctor.lint.argv import flag_values
    from doctor.profile_plan import render_args

    profile = ctx.profile
    if profile is None or not hasattr(profile, "render"):
        return None
    flags = dict(flag_values(render_args(profile)))
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
