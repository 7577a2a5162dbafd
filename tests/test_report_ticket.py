"""Reports a ticket can use: the deploy's verdict first, one labelled latency axis with client and server
figures, numbers with units, the command shell-quoted once, Markdown code in fixes, JUnit times and metrics."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from doctor.deploy.outcome import outcome_result
from doctor.report.html import render_html
from doctor.report.junit import render_junit
from doctor.report.markdown import render_markdown
from doctor.report.model import Report
from doctor.report.text import render_text
from doctor.results import Result, Status

FIX = "Set `--max-model-len 256` or less."


def deploy_report() -> Report:
    results = [outcome_result("fail", "the server did not become healthy: not healthy after 3 s"),
               Result("QD-DEPLOY-START", "Server starts", "deploy", "critical", Status.FAIL, "timeout",
                      fix=[FIX], seconds=53.2),
               Result("QD-DEPLOY-BURST", "Burst", "deploy", "high", Status.OK, "ok", seconds=4.5)]
    sections = {
        "metrics": {"requests": 8, "throughput": {"requests_per_s": 27.836539746661828},
                    "percentiles": {"ttft_ms": {"p50": 1221.0, "p90": 1500.0, "p99": 1800.0},
                                    "itl_ms": {"p50": 20.0, "p90": 25.0, "p99": 30.0}}},
        "server": {"backend": "vllm", "families": 72, "requests": 8, "preemptions": 0,
                   "latency": {"ttft_ms": {"p50": 24.0, "p90": 30.0, "p99": 40.0, "mean": 25.0}},
                   "kv_usage": {"before": 0.0, "after": 0.01, "peak": 0.42}},
    }
    return Report(command="deploy --profile cpu-tiny", results=results, sections=sections,
                  argv=["deploy", "--profile", "cpu-tiny", "--model", "/models/my model"])


def test_the_banner_states_the_deploys_verdict_first() -> None:
    r = deploy_report()
    html = render_html(r)
    assert re.search(r"<h1>✗ Deploy fail: the server did not become healthy", html)
    assert render_text(r).startswith("Deploy fail: the server did not become healthy")
    md = render_markdown(r)
    assert md.index("**Deploy fail: the server did not become healthy") < md.index("| ok | warn")


def test_the_command_is_shell_quoted_once() -> None:
    r = deploy_report()
    html, md = render_html(r), render_markdown(r)
    assert "<code>qwen-doctor deploy --profile cpu-tiny --model &#39;/models/my model&#39;</code>" in html
    assert html.count("--profile cpu-tiny --model") == 1
    assert "`qwen-doctor deploy --profile cpu-tiny --model '/models/my model'`" in md


def test_markdown_code_in_fixes_renders_as_code_and_plain_in_the_terminal() -> None:
    r = deploy_report()
    assert "<li>Set <code>--max-model-len 256</code> or less.</li>" in render_html(r)
    assert "1. Set `--max-model-len 256` or less." in render_markdown(r)
    text = render_text(r)
    assert "→ Set --max-model-len 256 or less." in text and "`" not in text


def test_numbers_carry_units_not_raw_floats() -> None:
    html = render_html(deploy_report())
    assert "requests_per_s 27.8/s" in html and "27.836539746661828" not in html
    assert "peak 42%" in html and "entries" not in html


def test_the_latency_chart_puts_client_and_server_on_one_labelled_log_axis() -> None:
    html = render_html(deploy_report())
    svg = html[html.index("<svg"):html.index("</svg>")]
    assert all(tick in svg for tick in (">10 ms<", ">100 ms<", ">1 s<", ">10 s<")), "decade ticks, labelled"
    assert "latency (log scale)" in svg
    assert "TTFT (client)" in svg and "TTFT (server)" in svg and "ITL (client)" in svg
    widths = {t: float(w) for w, t in re.findall(r'width="([\d.]+)" height="\d+" fill="[^"]+"><title>([^<]+)</title>',
                                                  svg)}
    assert widths["TTFT (client) p99 1,800.0 ms"] > widths["TTFT (server) p99 40.0 ms"] > \
        widths["ITL (client) p50 20.0 ms"], "one scale for every metric"


def test_junit_has_real_times_and_the_measurements_as_properties() -> None:
    root = ET.fromstring(render_junit(deploy_report()))
    suite = root.find("testsuite[@name='qwen-doctor.deploy']")
    assert float(suite.get("time")) == 57.7
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["client.percentiles.ttft_ms.p99"] == "1800"
    assert props["server.latency.ttft_ms.p50"] == "24" and props["server.kv_usage.peak"] == "0.42"
    assert props["client.throughput.requests_per_s"].startswith("27.83")
