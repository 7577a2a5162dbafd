"""The terminal report is quiet where nothing applies: problems in full, the rest counted one line per category;
-v lists every check (flutter doctor's shape)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from doctor.cli.main import cli
from doctor.report.model import Report
from doctor.report.text import render_text
from doctor.results import Status
from tests.report_sample import result

NO_DRIVER = Path(__file__).parent / "fixtures" / "no-driver.json"


def _fleet_skips(n: int) -> list:
    return [result(f"QD-FLEET-{i:03d}", Status.SKIP, "no fleet facts; run qwen-doctor check --ray", category="fleet")
            for i in range(1, n + 1)]


def test_a_category_of_skipped_checks_is_one_line_with_its_reason() -> None:
    text = render_text(Report("check", _fleet_skips(11)))
    assert "[-] fleet: 11 checks skipped (no fleet facts; run qwen-doctor check --ray)" in text
    assert "QD-FLEET-001" not in text


def test_problems_keep_their_fix_and_the_passed_and_skipped_rest_is_counted_on_the_category_line() -> None:
    results = [result("QD-HOST-001", Status.OK, "/dev/shm is 16 GiB"),
               result("QD-HOST-002", Status.WARN, "ulimit -n is 1024", fix=["ulimit -n 65536"], details=["why"]),
               result("QD-HOST-003", Status.SKIP, "no model given")]
    text = render_text(Report("check", results))
    assert "[!] host · 1 ok, 1 skipped (no model given)" in text
    assert "QD-HOST-002" in text and "→ ulimit -n 65536" in text
    assert "QD-HOST-001" not in text and "• why" not in text, "details and passed checks come with -v"


def test_several_skip_reasons_name_the_commonest_and_count_the_others() -> None:
    results = _fleet_skips(3) + [result("QD-FLEET-006", Status.SKIP, "not a Spark fleet", category="fleet")]
    assert "4 checks skipped (no fleet facts; run qwen-doctor check --ray; and 1 other reason)" in \
        render_text(Report("check", results))


def test_verbose_lists_every_check_with_its_details() -> None:
    results = _fleet_skips(2) + [result("QD-HOST-001", Status.OK, "/dev/shm is 16 GiB", details=["tmpfs"])]
    text = render_text(Report("check", results), verbose=True)
    assert "QD-FLEET-001" in text and "QD-FLEET-002" in text and "• tmpfs" in text
    assert "-v lists every check" not in text


def test_a_gpu_less_check_prints_at_most_25_lines_and_every_check_with_v() -> None:
    quiet = CliRunner().invoke(cli, ["check", "--from", str(NO_DRIVER)])
    loud = CliRunner().invoke(cli, ["check", "--from", str(NO_DRIVER), "-v"])
    assert quiet.exit_code == loud.exit_code == 1
    assert len(quiet.output.splitlines()) <= 25, quiet.output
    assert "[-] fleet: 11 checks skipped (no fleet facts" in quiet.output
    assert "QD-DRV-001" in quiet.output and "-v lists every check" in quiet.output
    assert all(f"QD-FLEET-{i:03d}" in loud.output for i in range(1, 12))


def test_categories_skipped_for_the_same_reason_share_one_line_and_v_splits_them() -> None:
    from doctor.report.text import _category_groups
    from doctor.results import Result, Status

    def skipped(check_id: str, category: str, why: str) -> Result:
        return Result(check_id, "t", category, "low", Status.SKIP, why)

    results = [skipped("A-1", "gpu", "no driver"), skipped("B-1", "memory", "no driver"),
               Result("C-1", "t", "plan", "low", Status.OK, "fine"), skipped("D-1", "topology", "no driver"),
               skipped("E-1", "hf", "not probed")]
    assert [names for names, _ in _category_groups(results, verbose=False)] == [
        ["gpu", "memory", "topology"], ["plan"], ["hf"]]
    assert [names for names, _ in _category_groups(results, verbose=True)] == [
        ["gpu"], ["memory"], ["plan"], ["topology"], ["hf"]]
