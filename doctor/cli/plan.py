"""`qwen-doctor plan`: memory / KV / parallelism plan for a GPU set, no GPU needed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from doctor.cli import options


@click.command()
@click.option("--gpus", required=True, metavar="NxGPU", help="GPUs to plan for, e.g. 8xA100-80G, 2xH200, 1xMYGPU:96:9.0.")
@click.option("--model", default="Qwen/Qwen3.5-35B-A3B", show_default=True,
              help="Registry name (…-FP8, …-GPTQ-Int4) or a local checkpoint directory with config.json.")
@click.option("--backend", type=click.Choice(["vllm", "sglang"]), default="vllm", show_default=True)
@click.option("--tp", "--tensor-parallel-size", "tp", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--pp", "--pipeline-parallel-size", "pp", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--dp", "--data-parallel-size", "dp", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--enable-expert-parallel", is_flag=True, help="Spread routed experts over TP x DP ranks.")
@click.option("--kv-cache-dtype", type=click.Choice(["auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2"]),
              default="auto", show_default=True)
@click.option("--max-model-len", "--context-length", "max_model_len", type=click.IntRange(min=1), default=None,
              help="Default: the model's max_position_embeddings.")
@click.option("--max-num-seqs", "--max-running-requests", "max_num_seqs", type=click.IntRange(min=1), default=None)
@click.option("--gpu-memory-utilization", type=click.FloatRange(0, 1, min_open=True), default=0.9, show_default=True)
@click.option("--mem-fraction-static", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="SGLang; default: SGLang's own heuristic for this GPU.")
@click.option("--max-num-batched-tokens", "--chunked-prefill-size", "max_num_batched_tokens",
              type=click.IntRange(min=1), default=None)
@click.option("--language-model-only", "--language-only", "language_model_only", is_flag=True,
              help="Do not load the vision tower.")
@click.option("--mm-encoder-tp-mode", type=click.Choice(["weights", "data"]), default="weights", show_default=True)
@click.option("--mtp", "mtp_tokens", type=click.IntRange(min=0), default=0, show_default=True,
              help="MTP speculative tokens (loads the MTP layer).")
@click.option("--no-prefix-caching", is_flag=True, help="vLLM --no-enable-prefix-caching.")
@click.option("--enforce-eager", is_flag=True, help="No CUDA graphs.")
@click.option("--block-size", type=click.IntRange(min=1), default=None)
@click.option("--overhead-gib", type=click.FloatRange(min=0), default=None,
              help="Override the estimated activations + CUDA graphs + context per GPU.")
@options.report_outputs
def plan(gpus, model, backend, tp, pp, dp, enable_expert_parallel, kv_cache_dtype, max_model_len, max_num_seqs,
         gpu_memory_utilization, mem_fraction_static, max_num_batched_tokens, language_model_only,
         mm_encoder_tp_mode, mtp_tokens, no_prefix_caching, enforce_eager, block_size, overhead_gib,
         report_out) -> None:
    """Print a per-GPU memory plan and whether it fits; exit 1 when it does not, with the smallest fix.

    The report (--format / --output) holds the plan as `sections.plan` and its verdicts as QD-PLAN results.
    """
    from doctor.models import get_model
    from doctor.planner import ServeConfig, parse_gpus
    from doctor.planner import plan as make_plan
    from doctor.planner.render import plan_to_dict, render_text
    from doctor.planner.results import plan_results
    from doctor.report.model import Report, now

    started = now()
    report_out = report_out.reading(_config_file(model))
    report_out.check()

    cfg = ServeConfig(
        backend=backend, tp=tp, pp=pp, dp=dp, expert_parallel=enable_expert_parallel, kv_cache_dtype=kv_cache_dtype,
        max_model_len=max_model_len, max_num_seqs=max_num_seqs, gpu_memory_utilization=gpu_memory_utilization,
        mem_fraction_static=mem_fraction_static, max_num_batched_tokens=max_num_batched_tokens,
        language_model_only=language_model_only, mm_encoder_tp_mode=mm_encoder_tp_mode, mtp_tokens=mtp_tokens,
        prefix_caching=not no_prefix_caching, enforce_eager=enforce_eager, block_size=block_size,
        overhead_gib=overhead_gib)
    result = make_plan(get_model(model), parse_gpus(gpus), cfg)
    report = Report(command=f"plan --gpus {gpus} --model {model} --backend {backend}", results=plan_results(result),
                    facts_summary={"source": "plan", "gpus": str(result.hardware)},
                    sections={"plan": plan_to_dict(result)}, argv=sys.argv[1:], created_at=started,
                    finished_at=now())
    report_out.write(report, terminal=lambda _redacted, _color: render_text(result) + "\n")
    sys.exit(0 if result.fits else 1)


def _config_file(model: str) -> Path | None:
    """The config.json that `--model` names (a checkpoint directory or the file), None for a registry name."""
    if os.path.isdir(model):
        return Path(model) / "config.json"
    return Path(model) if os.path.isfile(model) else None
