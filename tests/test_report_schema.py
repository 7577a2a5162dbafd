"""The JSON report follows the versioned JSON Schema shipped in the package, and the schema has teeth."""

from __future__ import annotations

import copy
import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from doctor.report.model import Report
from doctor.report.outputs import render
from tests.conftest import FIXTURES, load_fixture
from tests.report_sample import full_report
from tests.test_cli_check import qd

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(resources.files("doctor.report").joinpath("report.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def errors(validator: jsonschema.Draft202012Validator, doc: dict[str, Any]) -> list[str]:
    return [e.message for e in validator.iter_errors(doc)]


def test_a_report_with_every_section_validates(validator):
    doc = json.loads(render(full_report(), "json"))
    assert errors(validator, doc) == []
    assert set(doc["sections"]) == {"plan", "deployment", "exercises", "metrics", "remedies", "logs"}


@pytest.mark.parametrize("fixture", sorted(p.stem for p in FIXTURES.glob("*.json")))
def test_check_json_of_every_fixture_validates(validator, fixture: str):
    done = qd("check", "--from", str(FIXTURES / f"{fixture}.json"), "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    assert errors(validator, json.loads(done.stdout)) == []


@pytest.mark.parametrize("path, value", [
    (("status",), "maybe"),
    (("results", 0, "status"), "passed"),
    (("results", 0, "severity"), "urgent"),
    (("sections", "exercises", 0, "status"), "passed"),
    (("sections", "metrics", "percentiles", "ttft_ms", "p99"), "910 ms"),
    (("sections", "remedies", 0, "count"), 0),
    (("sections", "remedies", 0, "first_line"), "server.log:120"),
    (("sections", "plan", "fits"), "no"),
    (("schema_version",), 2),
    (("created_at",), "yesterday"),
])
def test_schema_rejects_wrong_shapes(validator, path: tuple, value: Any):
    doc = json.loads(render(full_report(), "json"))
    bad = copy.deepcopy(doc)
    node = bad
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert errors(validator, bad), f"{path} = {value!r} should be rejected"


def test_schema_rejects_unknown_top_level_keys_and_missing_results(validator):
    doc = json.loads(render(full_report(), "json"))
    assert errors(validator, {**doc, "extra": 1})
    assert errors(validator, {k: v for k, v in doc.items() if k != "results"})


def test_json_round_trips_through_the_model():
    report = full_report().redacted()
    again = Report.from_dict(json.loads(render(report, "json")))
    assert again.to_dict() == report.to_dict()


def test_schema_and_templates_are_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data = config["tool"]["setuptools"]["package-data"]["doctor.report"]
    assert "report.schema.json" in data and "templates/*.j2" in data and "templates/*.css" in data
    templates = resources.files("doctor.report").joinpath("templates")
    assert templates.joinpath("report.html.j2").is_file() and templates.joinpath("report.css").is_file()


def test_facts_summary_lists_each_gpu_for_the_table():
    from doctor.report.model import summarize

    rows = summarize(load_fixture("a100-8x-nvlink"), "bundle")["gpu_table"]
    assert len(rows) == 8
    assert rows[0]["name"].startswith("NVIDIA A100") and rows[0]["nvlink_active"] == 12


def test_bench_results_and_explain_findings_convert_to_the_documented_sections(validator):
    from doctor.report.sections import metrics_from_bench, remedy_from_finding

    bench = {"duration": 4.0, "completed": 7, "failed": 1, "request_throughput": 1.75, "output_throughput": 56.0,
             "mean_ttft_ms": 90.0, "p50_ttft_ms": 80.0, "p90_ttft_ms": 120.0, "p99_ttft_ms": 150.0,
             "p50_itl_ms": 9.5, "p90_itl_ms": 11.0, "p99_itl_ms": 30.0, "errors": ["HTTP 500"]}
    metrics = metrics_from_bench(bench)
    assert metrics["percentiles"] == {"ttft_ms": {"p50": 80.0, "p90": 120.0, "p99": 150.0},
                                      "itl_ms": {"p50": 9.5, "p90": 11.0, "p99": 30.0}}
    assert metrics["throughput"] == {"requests_per_s": 1.75, "output_tokens_per_s": 56.0}
    assert (metrics["requests"], metrics["errors"], metrics["duration_s"]) == (8, 1, 4.0)
    finding = {"remedy": {"id": "QD-R-NCCL-SHM", "component": "nccl", "severity": "error", "title": "no shm",
                          "why": "64 MB", "fix": [{"text": "--ipc=host", "applies": None}],
                          "source": ["https://github.com/NVIDIA/nccl/issues/525"]},
               "count": 2, "first": {"source": "a.log", "line": 3}, "last": {"source": "a.log", "line": 9},
               "line": "NCCL WARN Error while creating shared memory segment", "context": {"before": [], "after": []}}
    remedy = remedy_from_finding(finding)
    assert remedy["first_line"] == {"source": "a.log", "line": 3} and remedy["count"] == 2
    report = Report(command="explain a.log", results=[], sections={"metrics": metrics, "remedies": [remedy]})
    doc = json.loads(render(report, "json"))
    assert errors(validator, doc) == []
    assert "NCCL WARN Error while creating shared memory segment" in render(report, "html")
