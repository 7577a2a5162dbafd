"""`qwen-doctor check`: run every registered check against this machine or a bundle."""

from __future__ import annotations

import sys

import click

from doctor.cli import options

# The default of the installed vLLM's own flag (flag schemas, doctor/flags/schemas;
# tests/test_check_utilization_default.py holds this sentence to every shipped schema).
GPU_MEMORY_UTILIZATION_HELP = (
    "vLLM's --gpu-memory-utilization (default: the installed vLLM version's own: 0.9 up to 0.19, 0.92 from 0.20, "
    "decided at startup from 0.34; 0.26's 0.92 when the version is not known).")

@click.command()
@options.backend
@options.from_bundle
@click.option("--profile", "profile_name", default=None, metavar="P",
              help="Check for this deployment profile (name or YAML path): its backend, model, TP/PP and hardware.")
@click.option("--log", "logs", multiple=True, type=click.Path(dir_okay=False, allow_dash=True), metavar="FILE",
              help="Also explain this server log (plain, .gz or - for stdin; repeatable).")
@click.option("--only", multiple=True, metavar="ID", help="Run only these checks (id or id prefix; repeatable).")
@click.option("--skip", "skip_ids", multiple=True, metavar="ID", help="Skip these checks (id or prefix; repeatable).")
@click.option("--tp", type=click.IntRange(min=1), default=None, help="Tensor-parallel size of the deployment.")
@click.option("--pp", type=click.IntRange(min=1), default=None, help="Pipeline-parallel size of the deployment.")
@click.option("--model", default=None, help="Model id or path the deployment serves (e.g. Qwen/Qwen3.5-35B-A3B-FP8).")
@click.option("--quantization", default=None, help="Quantization method the deployment uses (e.g. fp8).")
@click.option("--gpu-memory-utilization", type=options.FiniteFloatRange(0, 1, min_open=True), default=None,
              help=GPU_MEMORY_UTILIZATION_HELP)
@click.option("--mem-fraction-static", type=options.FiniteFloatRange(0, 1, min_open=True), default=None,
              help="SGLang's --mem-fraction-static (default: computed by SGLang at startup from the GPU's memory; "
                   "give it to check free memory against it).")
@options.report_outputs
@options.fail_on
@options.verbose
@click.option("--list", "list_only", is_flag=True, help="List check ids with one-line descriptions and exit.")
@click.option("--no-plugins", is_flag=True, help="Do not load third-party checks from entry points.")
@click.option("--timeout", type=options.FiniteFloatRange(min=0.1), default=10.0, show_default=True,
              help="Seconds each probe may take.")
@options.fleet_ray
@options.fleet_spark
@options.hf
@click.option("--index", "ask_index", is_flag=True,
              help="Ask the configured package index whether the engine release's exact pins are served "
                   "(QD-VER-007; bounded by --timeout, also with --from).")
@options.node_timeout
def check(backend, bundle, profile_name, logs, only, skip_ids, tp, pp, model, quantization, gpu_memory_utilization,
          mem_fraction_static, report_out, fail_on, verbose, list_only, no_plugins, timeout,
          ray, spark, hf, ask_index, node_timeout) -> None:
    """Run the checks and print ✓ / ! / ✗ per check with the fix under every problem."""
    from doctor import registry, runner
    from doctor.context import CheckContext
    from doctor.facts.model import Facts
    from doctor.report.model import Report, exit_code, now, summarize

    started = now()

    reg = registry.load(plugins=not no_plugins)
    if list_only:
        for spec in reg.ordered():
            origin = "" if spec.source == "builtin" else f"  [{spec.source}]"
            click.echo(f"{spec.id:<13} {spec.severity:<8} {spec.title}: {spec.description}{origin}")
        return
    profile = None
    if profile_name:
        from profiles import load_profile

        if profile_name == "auto":
            from doctor.suggest import auto_profile

            profile = auto_profile(bundle, backend)
        else:
            profile = load_profile(profile_name)
        if backend and backend != profile.backend:
            from doctor.errors import DoctorError

            raise DoctorError(f"--backend {backend} contradicts profile {profile.name} (backend {profile.backend})")
        backend = profile.backend
        model = model or profile.model
    report_out = report_out.reading(bundle, getattr(profile, "path", None), *logs)
    report_out.check()
    if logs:
        from remedies.reader import check_readable

        for log_file in logs:
            check_readable(log_file)
    facts = None
    if bundle:
        options.no_fleet_with_bundle(ray, spark, hf)
        facts, source = Facts.load(bundle), f"bundle {bundle}"
        if facts.origin is not None:   # a pasted vLLM collect_env / SGLang check_env: checked for its engine
            from doctor.facts.envdump import FORMAT_NAMES

            source = f"{FORMAT_NAMES[facts.origin['format']]} dump {bundle}"
            backend = backend or facts.origin.get("backend")
    specs = runner.select(reg, backend, only, skip_ids)
    if facts is None:
        from doctor.facts.collect import collect
        from doctor.fleet.extend import extend

        facts, source = collect(timeout_s=timeout), "live"
        extend(facts.data, ray=ray, spark=spark, hf=hf, model=model or getattr(profile, "model", None),
               node_timeout_s=node_timeout, probe_timeout_s=timeout)
    opts = {"tp": tp, "pp": pp, "model": model, "quantization": quantization,
            "gpu_memory_utilization": gpu_memory_utilization, "mem_fraction_static": mem_fraction_static}
    ctx = CheckContext(facts=facts, backend=backend, profile=profile,
                       options={k: v for k, v in opts.items() if v is not None})
    if ask_index:
        from checks.resolve import projects_to_ask
        from doctor.facts.probes.index import probe

        facts.data["index"] = probe(projects_to_ask(ctx), timeout_s=timeout)
    results = runner.plugin_errors(reg) + runner.run_checks(specs, ctx, verbose=verbose)
    if logs:
        from remedies import explain_sources
        from remedies.results import to_results

        results += to_results(explain_sources(logs))
    command = "check" + (f" --profile {profile.name}" if profile else f" --backend {backend}" if backend else "")
    report = Report(command=command, results=results,
                    facts_summary=summarize(facts, source), facts=facts.data, argv=sys.argv[1:],
                    created_at=started, finished_at=now())
    from doctor.fleet.table import node_table

    if (table := node_table(facts)) is not None:
        report.sections["fleet"] = table
    report_out.write(report, fail_on=fail_on, verbose=verbose)
    sys.exit(exit_code(results, fail_on))
