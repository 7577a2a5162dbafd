"""deploy reports a crash no catalogue entry names as QD-R-UNKNOWN, as explain does (fake server, real deploy)."""

from __future__ import annotations

from remedies.explain import explain_sources
from tests.test_deploy_run import run


def _ids(out) -> list[str]:
    return [m["id"] for m in out.sections["remedies"]]


def test_a_server_dying_with_an_unnamed_traceback_gets_qd_r_unknown_first_with_its_root(tmp_path) -> None:
    out, by_id, _, seconds = run(tmp_path, mode="traceback", timeout=120)
    assert out.sections["deployment"]["start"]["state"] == "died" and seconds < 30
    assert _ids(out)[0] == "QD-R-UNKNOWN"
    unknown = out.sections["remedies"][0]
    assert unknown["severity"] == "error" and unknown["component"] == "vllm"
    assert unknown["line"] == "IndexError: index 256 is out of bounds for dimension 0 with size 128"
    assert unknown["first_line"]["source"] == str(tmp_path / "server.log")
    log = (tmp_path / "server.log").read_text().splitlines()
    assert log[unknown["first_line"]["line"] - 1] == unknown["line"]
    why = unknown["why"]
    assert why.startswith("Root exception: IndexError: index 256 is out of bounds for dimension 0 with size 128")
    assert "layer.py, line 812, in weight_loader" in why and "component: vllm" in why
    assert "final exception: RuntimeError: cannot load expert 256" in why
    start = by_id["QD-DEPLOY-START"]
    assert start.status.value == "fail" and start.remedy_ids[0] == "QD-R-UNKNOWN"
    assert start.summary.startswith("QD-R-UNKNOWN: ")
    assert out.remedies[0].id == "QD-R-UNKNOWN"


def test_a_traceback_whose_root_an_entry_names_is_not_unknown(tmp_path) -> None:
    out, by_id, _, _ = run(tmp_path, mode="die", timeout=120)
    assert "Traceback (most recent call last):" in (tmp_path / "server.log").read_text()
    assert _ids(out)[0] == "QD-R-VLLM-MAX-MODEL-LEN-DERIVED" and "QD-R-UNKNOWN" not in _ids(out)
    assert "QD-R-UNKNOWN" not in by_id["QD-DEPLOY-START"].remedy_ids


def test_a_traceback_printed_while_qwen_doctor_stops_the_server_is_not_unknown(tmp_path) -> None:
    out, by_id, _, _ = run(tmp_path, mode="slow", timeout=3, FAKE_SERVER_TRACEBACK_ON_TERM="1")
    assert "IndexError: index 256" in (tmp_path / "server.log").read_text(), "the server did crash on SIGTERM"
    assert out.sections["deployment"]["start"]["state"] == "timeout"
    assert "QD-R-UNKNOWN" not in _ids(out) and "QD-R-UNKNOWN" not in by_id["QD-DEPLOY-START"].remedy_ids


def test_a_healthy_server_stopped_by_qwen_doctor_has_no_unknown_crash(tmp_path) -> None:
    out, by_id, _, _ = run(tmp_path, mode="shutdown-noise")
    assert by_id["QD-DEPLOY-START"].status.value == "ok" and out.sections["remedies"] == []


def test_the_nearest_known_warning_before_the_crash_is_named_and_ranks_after_it(tmp_path) -> None:
    warning = "[2026-07-21 20:23:46] KV cache pool is full. Retract requests. #retracted_reqs: 1"
    out, _, _, _ = run(tmp_path, mode="traceback", timeout=120, FAKE_SERVER_SAY=warning)
    assert _ids(out) == ["QD-R-UNKNOWN", "QD-R-SGLANG-KV-POOL-FULL"], "an error ranks before a warning"
    why = out.sections["remedies"][0]["why"]
    assert "nearest known precursor: QD-R-SGLANG-KV-POOL-FULL" in why and why.endswith(f"{tmp_path / 'server.log'}:1.")


def test_deploy_and_explain_give_the_same_evidence_for_the_same_log(tmp_path) -> None:
    out, _, _, _ = run(tmp_path, mode="traceback", timeout=120)
    (found,) = [f for f in explain_sources([tmp_path / "server.log"]) if f.remedy.id == "QD-R-UNKNOWN"]
    unknown = out.sections["remedies"][0]
    assert (unknown["why"], unknown["line"], unknown["first_line"]["line"]) == (found.why, found.line, found.first.line)
    assert unknown["fix"] == [step.render() for step in found.steps]
