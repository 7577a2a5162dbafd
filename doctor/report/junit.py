"""JUnit XML: one testsuite per check category, one testcase per check, exercise and matched log remedy
(an exercise or remedy that is also a check result is that result's testcase, never a second one).

Testcases are named `[severity][ID] title` (checkov's convention); a failure's message is the fix, its body
the summary, details and fix steps, so CI systems show the remedy next to the red test.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from itertools import groupby
from typing import Any

from doctor.report.model import Report
from doctor.report.sections import as_status, fix_text
from doctor.report.view import unreported_exercises, unreported_remedies
from doctor.results import Status

# Characters XML 1.0 cannot carry at all (control bytes from raw logs): shown as \xNN instead.
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: Any) -> str:
    """Text that any XML parser accepts: control characters become visible escapes."""
    return _ILLEGAL_XML.sub(lambda m: f"\\x{ord(m.group(0)):02x}", str(text))


def junit_time(iso: str) -> str:
    """JUnit's timestamp: ISO 8601 without a UTC offset (the report's times are UTC)."""
    return iso[:19]


def testcase_name(severity: str, ident: str, title: str, subject: str | None = None) -> str:
    return f"[{severity}][{ident}] {title}" + (f" [{subject}]" if subject else "")


def render_junit(report: Report, fail_on: str = "fail") -> str:
    """The report as JUnit XML; warnings are failures only with fail_on='warn'."""
    report = report.redacted()
    root = ET.Element("testsuites", name="qwen-doctor", timestamp=junit_time(report.created_at))
    for category, group in groupby(sorted(report.results, key=lambda r: r.category), key=lambda r: r.category):
        suite = _suite(root, f"qwen-doctor.{category}", report)
        for r in group:
            _case(suite, f"qwen_doctor.{category}", testcase_name(r.severity, r.check_id, r.title, r.subject),
                  r.seconds, r.status, r.summary, r.details, r.fix, r.remedy_ids, fail_on)
    exercises = unreported_exercises(report.sections, report.results)
    if exercises:
        suite = _suite(root, "qwen-doctor.exercises", report)
        for ex in exercises:
            _case(suite, "qwen_doctor.exercises", testcase_name("high", "EXERCISE", ex.get("name", "")),
                  ex.get("seconds") or 0.0, as_status(ex.get("status")), ex.get("summary", ""),
                  ex.get("details") or [], ex.get("fix") or [], [], fail_on)
    remedies = unreported_remedies(report.sections, report.results)
    if remedies:
        suite = _suite(root, "qwen-doctor.log-remedies", report)
        for m in remedies:
            where = m.get("first_line") or {}
            summary = f"seen {m.get('count', 1)} time(s), first at {where.get('source', '?')}:{where.get('line', '?')}"
            name = testcase_name(m.get("severity", ""), m.get("id", ""), m.get("title", ""))
            _case(suite, "qwen_doctor.remedies", name,
                  0.0, Status.FAIL if m.get("severity") == "error" else Status.WARN, summary,
                  [m.get("line", ""), m.get("why", "")], [fix_text(s) for s in m.get("fix") or []], [], fail_on)
    _totals(root, root.findall("testsuite"))
    _properties(root, report.sections)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def flat_properties(sections: dict[str, Any]) -> list[tuple[str, str]]:
    """The run's measurements as (name, value) pairs: `client.*` from sections.metrics, `server.*` from
    sections.server, `deploy.*` from sections.deployment (numbers only, dotted paths)."""
    out: list[tuple[str, str]] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}", v)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append((prefix, f"{value:g}" if isinstance(value, float) else str(value)))

    deployment = sections.get("deployment") or {}
    for key in ("ready_seconds", "seconds", "exit_code"):
        walk(f"deploy.{key}", deployment.get(key))
    walk("client", sections.get("metrics") or {})
    walk("server", {k: v for k, v in (sections.get("server") or {}).items() if k != "families"})
    return out


def _properties(root: ET.Element, sections: dict[str, Any]) -> None:
    """Measurements as <properties> of the deploy suite (else the first), where CI dashboards read them."""
    pairs = flat_properties(sections)
    suites = root.findall("testsuite")
    if not pairs or not suites:
        return
    suite = next((s for s in suites if s.get("name") == "qwen-doctor.deploy"), suites[0])
    props = ET.Element("properties")
    for name, value in pairs:
        ET.SubElement(props, "property", name=xml_text(name), value=xml_text(value))
    suite.insert(0, props)


def _suite(root: ET.Element, name: str, report: Report) -> ET.Element:
    return ET.SubElement(root, "testsuite", name=name, timestamp=junit_time(report.created_at),
                         hostname=xml_text(report.facts_summary.get("hostname") or "unknown"))


def _case(suite: ET.Element, classname: str, name: str, seconds: float, status: Status, summary: str,
          details: list[str], fix: list[str], remedy_ids: list[str], fail_on: str) -> None:
    case = ET.SubElement(suite, "testcase", classname=classname, name=xml_text(name), time=f"{seconds:.3f}")
    body = "\n".join([summary, *(f"- {d}" for d in details if d), *(f"fix: {f}" for f in fix),
                      *([f"see: qwen-doctor remedies show {' '.join(remedy_ids)}"] if remedy_ids else [])])
    message = "; ".join(fix) or summary
    failing = status is Status.FAIL or (status is Status.WARN and fail_on == "warn")
    if status is Status.ERROR:
        ET.SubElement(case, "error", message=xml_text(summary), type="error").text = xml_text(body)
    elif failing:
        ET.SubElement(case, "failure", message=xml_text(message), type=status.value).text = xml_text(body)
    elif status is Status.SKIP:
        ET.SubElement(case, "skipped", message=xml_text(summary))
    elif status is Status.WARN:
        ET.SubElement(case, "system-out").text = xml_text("WARNING: " + body)


def _totals(root: ET.Element, suites: list[ET.Element]) -> None:
    grand = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    time_total = 0.0
    for suite in suites:
        cases = suite.findall("testcase")
        tally = {"tests": len(cases), "failures": sum(1 for c in cases if c.find("failure") is not None),
                 "errors": sum(1 for c in cases if c.find("error") is not None),
                 "skipped": sum(1 for c in cases if c.find("skipped") is not None)}
        seconds = sum(float(c.get("time", "0")) for c in cases)
        for key, value in tally.items():
            suite.set(key, str(value))
            grand[key] += value
        suite.set("time", f"{seconds:.3f}")
        time_total += seconds
    for key, value in grand.items():
        root.set(key, str(value))
    root.set("time", f"{time_total:.3f}")

