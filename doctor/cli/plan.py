"""`qwen-doctor plan`: memory / KV / parallelism plan for a GPU set, no GPU needed."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from doctor.cli import options


@click.command()
@click.option("--gpus", default=None, metavar="NxGPU",
              help="GPUs to plan for, e.g. 8xA100-80G, 2xH200, 1xGB10, 1xMYGPU:96:9.0 (GiB as torch reports it).")
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=None, metavar="N",
              help="GPUs of each node where --gpus spans several (ranks fill the nodes in order): an expert-parallel "
              "group across nodes gets DeepEP's RDMA buffer. Default: one node.")
@click.option("--facts", "facts_path", default=None, metavar="BUNDLE",
              help="Plan for the GPUs a `qwen-doctor collect` bundle records (plain or gzip), with the memory other "
              "processes held on them when it was collected (instead of --gpus).")
@click.option("--profile", "profile_name", default=None, metavar="P",
              help="Plan this deployment profile's flags (name or YAML path); options given here override it.")
@click.option("--from-log", "from_log", default=None, metavar="FILE",
              help="A vLLM or SGLang boot log (plain, .gz or - for stdin): reuse its measured weights / activation / "
              "graph figures and re-plan.")
@click.option("--model", default=None, help="Registry name (…-FP8, …-GPTQ-Int4) or a local checkpoint directory "
              "with config.json. Default: the profile's model, else Qwen/Qwen3.5-35B-A3B.")
@click.option("--backend", type=click.Choice(["vllm", "sglang"]), default=None, help="Default: vllm.")
@click.option("--backend-version", default=None, metavar="X", callback=options.version_value,
              help="Engine version whose defaults and accounting apply. Default: installed, else newest known.")
@click.option("--tp", "--tensor-parallel-size", "tp", type=int, default=None,
              help="Default: plan every layout that fits the GPUs, best first.")
@click.option("--pp", "--pipeline-parallel-size", "pp", type=int, default=None)
@click.option("--dp", "--data-parallel-size", "dp", type=int, default=None)
@click.option("--enable-expert-parallel", is_flag=True, default=None, help="Spread routed experts over TP x DP ranks.")
@click.option("--kv-cache-dtype", type=click.Choice(["auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2"]),
              default=None, help="Default: auto.")
@click.option("--max-model-len", "--context-length", "max_model_len", type=options.ContextLength(),
              default=None, help="Default: the model's max_position_embeddings; vLLM's auto (or -1) fits it to the "
                                 "KV cache.")
@click.option("--max-num-seqs", "--max-running-requests", "max_num_seqs", type=int,
              default=None)
@click.option("--gpu-memory-utilization", type=float, default=None,
              help="Default: the default of the vLLM version (0.92 since 0.20).")
@click.option("--kv-cache-memory", "kv_cache_memory", default=None, metavar="BYTES",
              help="vLLM --kv-cache-memory (bytes, or 58GiB): the KV budget as given, no utilisation budget.")
@click.option("--mem-fraction-static", type=float, default=None,
              help="SGLang; default: SGLang's own heuristic for this GPU.")
@click.option("--max-num-batched-tokens", "--chunked-prefill-size", "max_num_batched_tokens",
              type=int, default=None)
@click.option("--language-model-only", "--language-only", "language_model_only", is_flag=True, default=None,
              help="Do not load (or profile) the vision tower.")
@click.option("--mm-encoder-tp-mode", type=click.Choice(["weights", "data"]), default=None)
@click.option("--mtp", "mtp_tokens", type=int, default=None,
              help="MTP speculative tokens (loads the MTP layer).")
@click.option("--speculative-config", "speculative_config", default=None, metavar="JSON",
              help='vLLM --speculative-config, e.g. \'{"method": "dflash", "model": "z-lab/Qwen3.5-35B-A3B-DFlash", '
                   '"num_speculative_tokens": 15}\' (mtp, eagle, eagle3, dflash; the drafter from the registry '
                   'or a local directory with config.json).')
@click.option("--flag", "engine_flags", multiple=True, metavar="ARGS",
              help="Engine flags as the engine takes them, planned like a profile's (repeatable), e.g. "
                   "--flag '--speculative-algorithm DFLASH --speculative-draft-model-path z-lab/Qwen3.5-35B-A3B-DFlash'.")
@click.option("--no-prefix-caching", is_flag=True, default=None, help="vLLM --no-enable-prefix-caching.")
@click.option("--enable-prefix-caching", is_flag=True, default=None, help="vLLM --enable-prefix-caching.")
@click.option("--enforce-eager", is_flag=True, default=None, help="No CUDA graphs.")
@click.option("--block-size", type=int, default=None)
@click.option("--overhead-gib", type=float, default=None,
              help="Override the estimated activations + CUDA graphs + non-torch memory per GPU.")
@options.report_outputs
def plan(gpus, gpus_per_node, facts_path, profile_name, from_log, model, backend, backend_version, tp, pp, dp,
         enable_expert_parallel,
         kv_cache_dtype, max_model_len, max_num_seqs, gpu_memory_utilization, kv_cache_memory, mem_fraction_static,
         max_num_batched_tokens, language_model_only, mm_encoder_tp_mode, mtp_tokens, speculative_config,
         engine_flags, no_prefix_caching, enable_prefix_caching, enforce_eager, block_size, overhead_gib,
         report_out) -> None:
    """Print a per-GPU memory plan and whether it fits; exit 1 when it does not, with the smallest fix.

    Without --tp (and no profile or log that sets it) every layout that fits the GPUs is listed, best first,
    and the best is planned in full. The report (--format / --output) holds the plan as `sections.plan`
    and its verdicts as QD-PLAN results.
    """
    from doctor.planner.errors import PlanInputError
    from doctor.planner.flags import _bytes, config_kwargs, deployment_kwargs

    flags: dict[str, Any] = {
        "tp": tp, "pp": pp, "dp": dp, "expert_parallel": enable_expert_parallel, "kv_cache_dtype": kv_cache_dtype,
        "max_model_len": max_model_len, "max_num_seqs": max_num_seqs,
        "gpu_memory_utilization": gpu_memory_utilization, "mem_fraction_static": mem_fraction_static,
        "max_num_batched_tokens": max_num_batched_tokens, "language_model_only": language_model_only,
        "mm_encoder_tp_mode": mm_encoder_tp_mode, "mtp_tokens": mtp_tokens, "enforce_eager": enforce_eager,
        "block_size": block_size, "overhead_gib": overhead_gib, "backend_version": backend_version,
        "prefix_caching": False if no_prefix_caching else (True if enable_prefix_caching else None),
    }
    if kv_cache_memory is not None:
        try:
            flags["kv_cache_memory_gib"] = _bytes(str(kv_cache_memory)) / (1 << 30)
        except (ValueError, IndexError, OverflowError):
            raise PlanInputError(f"--kv-cache-memory {kv_cache_memory!r} is not a size in bytes") from None
    given = {k: v for k, v in flags.items() if v is not None}
    argv = [token for text in engine_flags for token in _split_flags(text)]
    if speculative_config is not None:
        argv += ["--speculative-config", speculative_config]
    given = {**config_kwargs(argv), **given}
    base: dict[str, Any] = {}
    if profile_name:
        from profiles import load_profile

        profile = load_profile(profile_name)
        report_out = report_out.reading(profile.path)
        if backend and backend != profile.backend:
            raise PlanInputError(f"--backend {backend} contradicts profile {profile.name} (backend {profile.backend})")
        backend = profile.backend
        model = model or profile.model
        base = deployment_kwargs(profile.deployment())
        if gpus_per_node is None:
            from doctor.profile_plan import profile_gpus_per_node

            gpus_per_node = profile_gpus_per_node(profile)
        if gpus is None and facts_path is None and profile.hardware.gpu_count:
            raise PlanInputError(f"plan --profile {profile.name} needs --gpus (the profile wants "
                                 f"{profile.hardware.gpu_count} GPUs of at least {profile.hardware.min_gpu_memory_gib} GiB)")
    if facts_path is not None:
        if gpus is not None:
            raise PlanInputError("give --gpus or --facts, not both (--facts plans the GPUs its bundle records)")
        report_out = report_out.reading(facts_path)
    _run(gpus or facts_path, model or "Qwen/Qwen3.5-35B-A3B", backend or "vllm", {**base, **given}, from_log,
         report_out, facts=facts_path is not None, gpus_per_node=gpus_per_node)


def _split_flags(text: str) -> list[str]:
    """One --flag value split as a shell would; unbalanced quotes are bad input."""
    from doctor.deployment import DeploymentError, split_command
    from doctor.planner.errors import PlanInputError

    try:
        return split_command(text)
    except DeploymentError as exc:
        raise PlanInputError(f"--flag {text!r}: {exc} (quote the engine flags as the shell would)") from None


def _run(gpus: str | None, model: str, backend: str, kwargs: dict[str, Any], from_log: str | None,
         report_out: Any, facts: bool = False, gpus_per_node: int | None = None) -> None:
    """Plan and print; `gpus` is a facts bundle's path where `facts` is set."""
    from doctor.models import get_model
    from doctor.planner import ServeConfig, parse_gpus
    from doctor.planner.errors import PlanInputError
    from doctor.planner.render import plan_to_dict, render_layouts, render_text
    from doctor.planner.results import plan_results
    from doctor.report.model import Report, now

    started = now()
    report_out = report_out.reading(_config_file(model), from_log)
    report_out.check()
    spec = get_model(model)
    bundle = _load_facts(gpus) if facts else None
    if bundle is not None:
        from doctor.planner.flags import env_kwargs

        kwargs = {**env_kwargs(bundle.env, backend), **kwargs}   # the engine's environment there; flags and profile win
    if from_log:
        from doctor.planner.bootlog import read_log_text
        from doctor.planner.sglang_bootlog import is_sglang_log, sglang_boot_log_from_text

        log_text = read_log_text(from_log)
        if is_sglang_log(log_text):
            from doctor.planner.replan import sglang_logged_config, sglang_replan

            sg_boot = sglang_boot_log_from_text(log_text, from_log)
            logged = sglang_logged_config(sg_boot, ServeConfig(backend_version=kwargs.get("backend_version")))
            wanted = logged.with_(**kwargs)
            backend = "sglang"
            result, layouts = sglang_replan(spec, sg_boot, logged, wanted, _hardware(gpus, bundle) if gpus else None), []
        else:
            from doctor.planner.bootlog import boot_log_from_text
            from doctor.planner.replan import logged_config, logged_gpu, replan

            if backend != "vllm":
                raise PlanInputError("--from-log reads vLLM and SGLang boot logs; this one is neither SGLang's "
                                     "(no 'Load weight end' line) nor, with --backend sglang, vLLM's")
            boot = boot_log_from_text(log_text, from_log)
            logged = logged_config(boot, ServeConfig())
            wanted = logged.with_(**kwargs)
            hardware = _hardware(gpus, bundle) if gpus else parse_gpus(f"{wanted.world_size}x{logged_gpu(boot).name}:"
                                                                         f"{boot.total_gib}")
            hardware = replace(hardware, gpus_per_node=gpus_per_node)
            result, layouts = replan(spec, boot, logged, wanted, hardware), []
    else:
        if gpus is None:
            raise PlanInputError("plan needs --gpus (e.g. --gpus 2xH200), or --from-log with a vLLM boot log")
        hardware = replace(_hardware(gpus, bundle), gpus_per_node=gpus_per_node)
        cfg = ServeConfig(backend=backend, **kwargs)
        cfg.validate()
        if "tp" in kwargs:
            from doctor.planner import plan as make_plan

            result, layouts = make_plan(spec, hardware, cfg), []
        else:
            from doctor.planner.layouts import plan_layouts

            layouts = plan_layouts(spec, hardware, cfg)
            if not layouts:
                raise PlanInputError(f"no layout of {hardware} can split {spec.name}")
            result = layouts[0]
    text = (render_layouts(layouts) + "\n\n" if len(layouts) > 1 else "") + render_text(result)
    report = Report(command=f"plan --gpus {result.hardware} --model {spec.name} --backend {backend}",
                    results=plan_results(result), facts_summary={"source": "plan", "gpus": str(result.hardware)},
                    sections={"plan": plan_to_dict(result)}, argv=sys.argv[1:], created_at=started,
                    finished_at=now())
    from doctor.textsafe import visible

    # A bundle's GPU name or a log's model path is the user's text: on a terminal its escapes must not repaint it.
    report_out.write(report, terminal=lambda _redacted, _color: visible(text) + "\n")
    sys.exit(0 if result.fits else 1)


def _load_facts(path: str) -> Any:
    """The facts bundle of --facts."""
    from doctor.facts.model import Facts

    return Facts.load(path)


def _hardware(gpus: str, bundle: Any) -> Any:
    """The GPUs of `--gpus`, or of the facts `bundle` (with what other processes held on them) where one is read."""
    from doctor.planner import parse_gpus

    if bundle is None:
        return parse_gpus(gpus)
    from doctor.planner.startup import facts_hardware

    return facts_hardware(bundle)


def _config_file(model: str) -> Path | None:
    """The config.json that `--model` names (a checkpoint directory or the file), None for a registry name."""
    if os.path.isdir(model):
        return Path(model) / "config.json"
    return Path(model) if os.path.isfile(model) else None
