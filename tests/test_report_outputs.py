"""`check --output/--format/--redact-hosts` as the ticket and CI workflows use them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from doctor.errors import DoctorError
from doctor.report.outputs import Target, plan_targets
from tests.conftest import FIXTURES
from tests.report_sample import HOSTNAME, PLANTED, planted_facts
from tests.test_cli_check import qd


@pytest.fixture
def planted_bundle(tmp_path: Path) -> Path:
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(planted_facts()))
    return path


def test_acceptance_three_valid_files_and_no_planted_secret(tmp_path: Path, planted_bundle: Path):
    outs = [tmp_path / "r.html", tmp_path / "r.xml", tmp_path / "r.json"]
    done = qd("check", "--from", str(planted_bundle), *(a for o in outs for a in ("--output", str(o))))
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [f"wrote {o} ({f})" for o, f in zip(outs, ("html", "junit", "json"))]
    assert "QD-HOST-003" in done.stdout, "the terminal still gets the text report"
    for path in outs:
        data = path.read_bytes()
        assert [s for s in PLANTED if s.encode() in data] == [], path.name
    assert json.loads(outs[2].read_text())["facts"]["env"]["HF_TOKEN"] == "[REDACTED]"
    assert ET.parse(outs[1]).getroot().get("failures") == "1"
    assert outs[0].read_text().startswith("<!DOCTYPE html>")
    assert [s for s in PLANTED if s in done.stdout] == []


def test_format_flag_writes_html_to_the_named_file(tmp_path: Path):
    out = tmp_path / "report.html"
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--format", "html", "--output", str(out))
    assert done.returncode == 1
    assert "QD-HOST-003" in out.read_text()


def test_format_to_stdout(tmp_path: Path):
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--format", "junit")
    assert ET.fromstring(done.stdout).tag == "testsuites"
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--format", "md", "-o", "-")
    assert done.stdout.startswith("## qwen-doctor report: ✗ fail")


def test_redact_hosts_removes_the_hostname_from_every_file(tmp_path: Path, planted_bundle: Path):
    outs = [tmp_path / n for n in ("r.html", "r.xml", "r.json", "r.md", "r.txt")]
    qd("check", "--from", str(planted_bundle), "--redact-hosts", *(a for o in outs for a in ("-o", str(o))))
    for path in outs:
        assert HOSTNAME not in path.read_text(), path.name
    assert json.loads(outs[2].read_text())["facts_summary"]["hostname"] == "[HOST-1]"


@pytest.mark.parametrize("args, message", [
    (["--format", "json", "--output", "{d}/r.xml"], "--format json contradicts the extension of"),
    (["--output", "{d}/report.out"], "cannot tell the report format of"),
    (["--output", "{d}/missing/r.html"], "does not exist"),
    (["--output", "{d}/old.html"], "is a directory"),
])
def test_bad_outputs_are_one_line_exit_2_and_write_nothing(tmp_path: Path, args: list[str], message: str):
    keep = tmp_path / "r.html"
    keep.write_text("the user's old report")
    (tmp_path / "old.html").mkdir()
    argv = [a.format(d=tmp_path) for a in args]
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--output", str(keep), *argv)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr
    assert keep.read_text() == "the user's old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.html", "r.html"]


def test_targets_follow_extensions_and_format_fills_the_rest():
    assert plan_targets([], None) == [Target("-", "text")]
    assert plan_targets(["a.HTML", "b.xml", "c.markdown", "-"], None) == [
        Target("a.HTML", "html"), Target("b.xml", "junit"), Target("c.markdown", "md"), Target("-", "text")]
    assert plan_targets(["report", "-"], "json") == [Target("report", "json"), Target("-", "json")]
    with pytest.raises(DoctorError):
        plan_targets(["r.html"], "pdf")


def test_any_command_gets_the_outputs_with_one_decorator_and_one_call(tmp_path: Path):
    import click
    from click.testing import CliRunner

    from doctor.cli import options
    from tests.report_sample import full_report

    @click.command()
    @click.option("--profile")
    @options.report_outputs
    def deploy(profile, report_out):
        report_out.write(full_report())

    out = tmp_path / "r.xml"
    done = CliRunner().invoke(deploy, ["--profile", "p", "-o", str(out), "--redact-hosts"])
    assert done.exit_code == 0, done.output
    assert out.read_text().startswith('<?xml version="1.0" encoding="UTF-8"?>')
    assert HOSTNAME not in out.read_text()
    for flag in ("--format [text|json|junit|md|html]", "-o, --output PATH", "--redact-hosts"):
        assert flag in CliRunner().invoke(deploy, ["--help"]).output


def test_a_command_keeps_its_own_terminal_text_and_it_sees_the_redacted_report(tmp_path: Path, capsys):
    from doctor.report.outputs import write_outputs
    from tests.report_sample import API_KEY, full_report

    def table(report, color: bool) -> str:
        return f"my own table for {report.command}\n"

    written = write_outputs(full_report(), [str(tmp_path / "r.json")], terminal=table)
    assert written == [str(tmp_path / "r.json")]
    out = capsys.readouterr().out
    assert out.startswith("my own table for deploy --profile vllm-stable --api-key [REDACTED]")
    assert API_KEY not in out
    write_outputs(full_report(), [], "json", terminal=table)
    assert json.loads(capsys.readouterr().out)["command"].endswith("[REDACTED]"), "--format json is not the table"
