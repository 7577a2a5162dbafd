"""Every report format renders the same redacted model: no planted secret survives, hostile text stays text."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from doctor.report.html import render_html
from doctor.report.markdown import fenced, render_markdown
from doctor.report.outputs import FORMATS, render
from doctor.report.text import render_text
from doctor.results import Status
from tests.report_sample import API_KEY, HF, HOST_IP, HOSTNAME, PLANTED, SCRIPT, full_report, result


@pytest.fixture(scope="module")
def rendered() -> dict[str, bytes]:
    report = full_report()
    return {fmt: render(report, fmt, verbose=True).encode("utf-8") for fmt in FORMATS}


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_planted_secret_in_any_byte_of_any_format(rendered: dict[str, bytes], fmt: str):
    out = rendered[fmt]
    leaked = [s for s in PLANTED if s.encode() in out]
    assert leaked == [], f"{fmt} leaks {leaked}"
    assert b"[REDACTED]" in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_redaction_does_not_hide_what_a_reader_needs(rendered: dict[str, bytes], fmt: str):
    out = rendered[fmt].decode()
    assert "QD-HOST-001" in out and "/dev/shm is 64 MiB" in out
    assert HOSTNAME in out, "hostnames stay unless --redact-hosts"


def test_the_model_is_left_untouched_by_rendering():
    report = full_report()
    render(report, "json")
    assert report.facts["env"]["HF_TOKEN"] == HF
    assert report.redaction is None


def test_hosts_are_pseudonymised_on_request_in_every_format():
    safe = full_report().redacted(hosts=True)
    for fmt in FORMATS:
        out = render(safe, fmt)
        assert HOSTNAME not in out and HOST_IP not in out, fmt
    assert "[HOST-1]" in render(safe, "json")
    assert json.loads(render(safe, "json"))["redaction"] == {"secrets": True, "hosts": True}


def test_html_escapes_log_content_and_runs_no_script(rendered: dict[str, bytes]):
    page = rendered["html"].decode()
    assert "<script" not in page.lower()
    assert "&lt;script&gt;document.title=" in page
    assert 'href="javascript:' not in page


def test_html_is_self_contained(rendered: dict[str, bytes]):
    page = rendered["html"].decode()
    assert not re.search(r"""\b(src|srcset|poster|data)\s*=""", page)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert "default-src 'none'" in page, "a CSP forbids any network load even if content slipped through"
    assert page.count("<style>") == 1


def test_html_puts_failed_checks_first_with_their_fixes(rendered: dict[str, bytes]):
    page = rendered["html"].decode()
    problems, passing = page.index('id="problems"'), page.index('id="passing"')
    assert problems < passing
    failure = page.index("QD-HOST-001")
    assert page.index("docker run --ipc=host ...") > failure
    assert page.index("QD-ENV-001") < page.index("QD-HOST-001") < page.index("QD-VER-001"), "error, fail, warn"
    assert page.index("QD-DRV-001") > passing, "passing checks are in the collapsed list"
    assert "<details><summary>Raw facts</summary>" in page


def test_html_shows_latency_percentiles_as_inline_svg_and_the_gpu_table(rendered: dict[str, bytes]):
    page = rendered["html"].decode()
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert svg.count("<rect") == 12, "p50/p90/p99 for TTFT, TPOT, ITL and E2E"
    assert "TTFT" in svg and "p99 8,800.0 ms" in svg
    gpus = page[page.index('id="gpus"'):]
    assert "NVIDIA H200" in gpus and "140.4" in gpus


def test_markdown_escapes_html_outside_code_blocks(rendered: dict[str, bytes]):
    text = rendered["md"].decode()
    outside = re.sub(r"(`{3,})[^\n]*\n.*?\n\1", "", text, flags=re.S)
    assert "<script" not in outside
    assert "&lt;script>" in outside
    assert "### Problems" in text and text.index("QD-ENV-001") < text.index("QD-DRV-001")


def test_markdown_fence_outgrows_backticks_inside():
    block = fenced("a ```` b")
    assert block.startswith("`````\n") and block.endswith("\n`````")


def test_text_lists_sections_after_checks():
    out = render_text(full_report().redacted())
    assert "[✗] plan: does not fit" in out
    assert "✗ json-schema: output is not valid JSON" in out
    assert re.search(r"ttft_ms\s+180.2\s+420.0\s+910.5", out)
    assert "✗ QD-R-NCCL-SHM NCCL cannot create its shared memory segment (3x, first at server.log:120)" in out


def test_junit_parses_back_with_one_testcase_per_check_exercise_and_remedy(rendered: dict[str, bytes], tmp_path):
    path = tmp_path / "r.xml"
    path.write_bytes(rendered["junit"])
    xml = JUnitXml.fromfile(str(path))
    cases = {case.name: case for suite in xml for case in suite}
    assert len(cases) == 5 + 3 + 1
    shm = cases["[high][QD-HOST-001] title of QD-HOST-001"]
    assert isinstance(shm.result[0], Failure)
    assert shm.result[0].message == "docker run --ipc=host ...; or --shm-size=16g"
    assert "qwen-doctor remedies show QD-R-NCCL-SHM" in shm.result[0].text
    assert isinstance(cases["[high][QD-ENV-001] title of QD-ENV-001"].result[0], Error)
    assert isinstance(cases["[high][QD-GPU-002] title of QD-GPU-002 [GPU0]"].result[0], Skipped)
    assert cases["[critical][QD-VER-001] title of QD-VER-001"].result == [], "a warning passes by default"
    assert isinstance(cases["[high][EXERCISE] json-schema"].result[0], Failure)
    remedy = cases["[error][QD-R-NCCL-SHM] NCCL cannot create its shared memory segment"]
    assert remedy.result[0].message == "docker run --ipc=host; or --shm-size=16g"
    assert (xml.tests, xml.failures, xml.errors, xml.skipped) == (9, 3, 1, 1)


def test_junit_fails_warnings_with_fail_on_warn():
    root = ET.fromstring(render(full_report(), "junit", fail_on="warn"))
    case = root.find(".//testcase[@name='[critical][QD-VER-001] title of QD-VER-001']")
    assert case is not None and case.find("failure").get("message") == "pip install -U 'vllm>=0.17.0'"


def test_junit_stays_well_formed_with_control_characters_from_logs():
    report = full_report()
    report.results[0].details.append("raw \x1b[31mred\x1b[0m \x00\x07\x1b bytes")
    text = render(report, "junit")
    root = ET.fromstring(text)
    assert "raw red \\x00\\x07\\x1b bytes" in "".join(root.itertext()), "colour dropped, other bytes shown"


def test_an_exercise_or_remedy_that_is_also_a_result_is_counted_once():
    report = full_report()
    report.results = [result("QD-DEPLOY-JSON", Status.FAIL, "output is not valid JSON", category="deploy"),
                      result("QD-R-NCCL-SHM", Status.FAIL, "3x at server.log:120", category="nccl")]
    report.sections = {"exercises": [{"name": "structured", "status": "fail", "summary": "output is not valid JSON",
                                      "check_id": "QD-DEPLOY-JSON"},
                                     {"name": "burst", "status": "warn", "summary": "slow"}],
                       "remedies": full_report().sections["remedies"]}
    assert "<h1>✗ 3 problems found</h1>" in render_html(report), "2 results + the burst exercise, not 4"
    names = [c.get("name") for c in ET.fromstring(render(report, "junit")).iter("testcase")]
    assert sorted(names) == ["[high][EXERCISE] burst", "[high][QD-DEPLOY-JSON] title of QD-DEPLOY-JSON",
                             "[high][QD-R-NCCL-SHM] title of QD-R-NCCL-SHM"]
    text = render_text(report)
    assert "! burst: slow" in text and "structured:" not in text


def test_renderers_refuse_nothing_when_sections_are_absent():
    report = full_report()
    report.sections = {}
    report.facts = None
    for fmt in FORMATS:
        assert "QD-HOST-001" in render(report, fmt)
    assert 'id="metrics"' not in render_html(report.redacted())
    assert "### Metrics" not in render_markdown(report.redacted())


def test_objects_tuples_and_undecodable_text_are_redacted_and_rendered_too():
    class Opaque:
        def __str__(self) -> str:
            return f"Opaque(token={API_KEY})"

    report = full_report()
    report.sections["deployment"]["argv"] = ("serve", "--api-key", API_KEY)
    report.sections["extra"] = {"object": Opaque(), "undecodable": "caf\udce9 log line"}
    for fmt in FORMATS:
        out = render(report, fmt)
        assert API_KEY not in out, fmt
        out.encode("utf-8")
    assert "caf? log line" in render(report, "json")


def test_undocumented_section_shapes_still_render_in_every_format():
    report = full_report()
    report.sections = {
        "deployment": {"profile": "vllm-stable", "base_url": "http://127.0.0.1:8000", "start": {"state": "ready"},
                       "exercises": [{"name": "chat", "status": "ok", "data": {"ttft_ms": 12.0}}],
                       "remedies": [{"id": "QD-R-X", "title": "t", "severity": "error", "lineno": 4, "line": "boom"}],
                       "metrics": {"p99_ttft_ms": 150.0}, "dry_run": True},
        "exercises": [{"name": "burst", "status": "passed", "data": {"p50_ttft_ms": 1.0}}],
        "remedies": [{"id": "QD-R-X", "title": "t", "severity": "error", "lineno": 4, "line": "boom"}],
        "explain": {"sources": ["a.log"], "findings": [{"count": 1, "line": SCRIPT}]},
    }
    for fmt in FORMATS:
        out = render(report, fmt)
        assert "QD-HOST-001" in out, fmt
    page = render(report, "html")
    assert "Other report data" in page and "<script" not in page
    junit = ET.fromstring(render(report, "junit"))
    burst = junit.find(".//testcase[@name='[high][EXERCISE] burst']")
    assert burst is not None and burst.find("error") is not None, "an unknown status is an error, never a pass"


def test_a_per_node_table_section_renders_as_a_table():
    report = full_report()
    report.sections["fleet"] = {"engine": "ray", "target": "auto", "status": "ok", "columns": ["node-a", "node-b"],
                                "rows": [{"name": "driver", "values": ["580.159.04", "570.86.15"]},
                                         {"name": "GPUs (NVML)", "values": ["8", "8"]}]}
    page = render(report, "html")
    assert "<h2>fleet (ray auto ok)</h2>" in page
    assert "<tr><th>driver</th><td>580.159.04</td><td>570.86.15</td></tr>" in page
    assert "| driver | 580.159.04 | 570.86.15 |" in render(report, "md")


def test_junit_timestamps_follow_the_junit_schema():
    root = ET.fromstring(render(full_report(), "junit"))
    stamps = [root.get("timestamp")] + [s.get("timestamp") for s in root.findall("testsuite")]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", s or "") for s in stamps), stamps


@pytest.mark.parametrize("renderer", ["doctor.report.text:render_text", "doctor.report.jsonout:render_json",
                                      "doctor.report.junit:render_junit", "doctor.report.markdown:render_markdown",
                                      "doctor.report.html:render_html"])
def test_each_renderer_called_directly_still_redacts(renderer: str):
    import importlib

    module, func = renderer.split(":")
    out = getattr(importlib.import_module(module), func)(full_report())
    assert [s for s in PLANTED if s in out] == []
