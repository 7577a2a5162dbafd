"""`qwen-doctor probe URL`: exercise and judge an OpenAI-compatible vLLM or SGLang server that is already
running (the same exercise stage as `deploy`), with its /metrics read before and after."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace

import click

from doctor.cli import options
from doctor.errors import DoctorError
from doctor.safeio import BadReply, reply_json


def _base_url(url: str) -> str:
    """The server root: scheme and host[:port], without a trailing /v1."""
    import httpx

    try:
        parsed = httpx.URL(url)
    except Exception:
        raise DoctorError(f"not a URL: {url!r}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise DoctorError(f"probe needs an http(s) URL such as http://127.0.0.1:8000, got {url!r}")
    path = parsed.path.rstrip("/")
    path = path[: -len("/v1")] if path.endswith("/v1") else path
    return str(parsed.copy_with(path=path or "", query=None, fragment=None)).rstrip("/")


def _served_model(base: str, headers: dict[str, str], wanted: str | None) -> tuple[str, int | None]:
    """The model to exercise (`wanted`, else the first one /v1/models lists) and the context length vLLM lists
    for it (`max_model_len`; None where the server does not say); DoctorError when the server does not answer."""
    import httpx

    from doctor.boundedhttp import bounded_client

    try:
        with bounded_client(10.0, trust_env=False, headers=headers) as client:
            r = client.get(f"{base}/v1/models")
    except httpx.HTTPError as exc:
        raise DoctorError(f"cannot reach {base}: {type(exc).__name__}: {exc}") from None
    if r.status_code != 200:
        raise DoctorError(f"{base}/v1/models answers HTTP {r.status_code}" +
                          (" (pass --api-key)" if r.status_code == 401 else ""))
    from doctor.deploy.exercise import served_models

    try:
        listed = served_models(reply_json(r.content))
    except BadReply as exc:
        raise DoctorError(f"{base}/v1/models: {exc}") from None
    if not listed and not wanted:
        raise DoctorError(f"{base}/v1/models lists no model; pass --model")
    entry = next((m for m in listed if m["id"] == wanted), None) if wanted else listed[0]
    length = (entry or {}).get("max_model_len")
    return wanted or listed[0]["id"], length if isinstance(length, int) and length > 0 else None


@click.command()
@click.argument("url")
@click.option("--model", default=None, help="Served model name (default: the first one /v1/models lists).")
@click.option("--api-key", default=None, envvar="QWEN_DOCTOR_API_KEY", show_envvar=True,
              help="Bearer token the server requires.")
@click.option("--reasoning/--no-reasoning", default=None,
              help="Whether the server has a reasoning parser (default: found out from its answers).")
@click.option("--burst", type=click.IntRange(1, 512), default=8, show_default=True,
              help="Parallel streams in the burst (up to 512).")
@click.option("--burst-tokens", type=click.IntRange(1, 8192), default=32, show_default=True,
              help="Output tokens per burst request.")
@click.option("--slo", "slo_items", multiple=True, metavar="NAME=VALUE",
              help="A service-level objective the burst must meet (repeatable), e.g. ttft_p99_ms=2000.")
@click.option("--sweep", "sweep_text", default=None, metavar="C1,C2,...",
              help="Also measure each concurrency warm (e.g. 1,8,64,256): throughput, TTFT / TPOT percentiles, the "
                   "knee, the largest concurrency meeting every --slo; a chart in the HTML report.")
@click.option("--bench", is_flag=True,
              help="Also run `vllm bench serve` against the server (at --burst, or each --sweep concurrency) and "
                   "report its figures.")
@click.option("--tokenizer", default=None, help="Tokenizer for --bench (default: the served model name).")
@click.option("--request-timeout", type=options.FiniteFloatRange(min=1), default=120.0, show_default=True,
              help="Seconds one request may take.")
@options.report_outputs
@options.fail_on
@options.verbose
def probe(url, model, api_key, reasoning, burst, burst_tokens, slo_items, sweep_text, bench, tokenizer,
          request_timeout, report_out, fail_on, verbose) -> None:
    """Exercise a running server (models, chat, stream, JSON schema, reasoning, thinking off, tool calls, image,
    prefix cache, speculative decoding, a warm burst, an optional sweep) and judge its /metrics."""
    from doctor.deploy.bench import bench_section
    from doctor.deploy.exercise import ExerciseConfig
    from doctor.deploy.judge import parse_slo
    from doctor.deploy.load import parse_sweep, sweep_section
    from doctor.deploy.probe import exercise_server
    from doctor.deploy.run import exercise_result, exercise_section, metrics_section
    from doctor.deploy.server_traits import ServerTraits
    from doctor.report.model import Report, exit_code, now

    slo = parse_slo(slo_items)
    sweep = parse_sweep(sweep_text)
    base = _base_url(url)
    report_out.check()
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    started = now()
    model, max_len = _served_model(base, headers, model)
    traits = replace(ServerTraits.unknown(), max_model_len=max_len)
    cfg = ExerciseConfig(model=model, reasoning=reasoning, burst=burst, burst_tokens=burst_tokens,
                         request_timeout=request_timeout, headers=tuple(headers.items()), traits=traits,
                         sweep=sweep, bench=bench, tokenizer=tokenizer)
    click.echo(f"  probing {base} ({model}): exercises, then a warm burst of {burst}"
               + (f", then a sweep over {', '.join(map(str, sweep))}" if sweep else "") + " ...", err=True)
    probed = asyncio.run(exercise_server(base, cfg, slo))
    results = [exercise_result(ex) for ex in probed.exercises] + probed.results
    report = Report(command=f"probe {base}", results=results, argv=sys.argv[1:], created_at=started)
    report.sections["exercises"] = [exercise_section(ex) for ex in probed.exercises]
    burst_ex = next((e for e in probed.exercises if e.name == "burst"), None)
    if burst_ex is not None and burst_ex.data:
        report.sections["metrics"] = metrics_section(burst_ex, burst)
    if probed.server is not None:
        report.sections["server"] = probed.server
    if probed.sweep:
        report.sections["sweep"] = sweep_section(probed.sweep)
    if probed.bench:
        report.sections["bench"] = bench_section(probed.bench)
    report.sections["probe"] = {"url": base, "model": model, "metrics": probed.unavailable or "read",
                                **probed.detected}
    report.finished_at = now()
    report_out.write(report, fail_on=fail_on, verbose=verbose)
    sys.exit(exit_code(report.results, fail_on))
