"""Real log excerpts from public issue threads are attributed to the right entry; healthy logs yield nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain_sources, load_catalogue

LOGS = Path(__file__).parent / "data" / "logs"


def header(path: Path, key: str) -> str:
    prefix = f"# {key}:"
    return next(line[len(prefix):].strip() for line in path.read_text(encoding="utf-8").splitlines()
                if line.startswith(prefix))


EXCERPTS = sorted(p for p in LOGS.glob("*.log") if header(p, "expect") != "none")
HEALTHY = sorted(p for p in LOGS.glob("*.log") if header(p, "expect") == "none")


def test_at_least_20_sourced_excerpts_from_public_threads():
    assert len(EXCERPTS) >= 20
    for path in EXCERPTS:
        assert header(path, "source").startswith("https://github.com/"), path.name
        assert load_catalogue().get(header(path, "expect")) is not None, path.name


@pytest.mark.parametrize("path", EXCERPTS, ids=[p.name for p in EXCERPTS])
def test_excerpt_is_attributed_to_its_entry_first(path):
    findings = explain_sources([path])
    assert findings and findings[0].remedy.id == header(path, "expect")


@pytest.mark.parametrize("path", HEALTHY, ids=[p.name for p in HEALTHY])
def test_a_clean_startup_log_yields_nothing(path):
    assert explain_sources([path]) == []


def test_healthy_logs_of_both_backends_are_present():
    names = " ".join(p.name for p in HEALTHY)
    assert "vllm" in names and "sglang" in names


@pytest.mark.parametrize("order", [("vllm-17939-sampler-oom.log", "vllm-27508-engine-core-init.log"),
                                   ("vllm-27508-engine-core-init.log", "vllm-17939-sampler-oom.log")])
def test_the_real_oom_comes_before_engine_core_initialization_failed(order):
    ids = [f.remedy.id for f in explain_sources([LOGS / name for name in order])]
    assert ids[0] == "QD-R-VLLM-SAMPLER-WARMUP-OOM"
    assert ids[-1] == "QD-R-VLLM-ENGINE-CORE-INIT-FAILED"


def test_each_remedy_is_reported_once_with_first_last_and_count():
    (finding,) = [f for f in explain_sources([LOGS / "llamafactory-7396-watchdog.log"])]
    assert finding.count == 2
    assert (finding.first.line, finding.last.line) == (3, 4)
    assert finding.first.source.endswith("llamafactory-7396-watchdog.log")


def test_findings_across_files_keep_each_files_line_numbers():
    first, second = LOGS / "vllm-1465-gcs.log", LOGS / "vllm-19543-gcs.log"
    (finding,) = explain_sources([first, second])
    assert finding.count == 2
    assert (finding.first.source, finding.first.line) == (str(first), 3)
    assert (finding.last.source, finding.last.line) == (str(second), 4)


def test_findings_become_check_results_for_check_log_and_deploy(tmp_path):
    from doctor.results import Status
    from remedies.results import to_results

    log = tmp_path / "server.log"
    log.write_text("[2026-07-21 20:23:46] KV cache pool is full. Retract requests. #retracted_reqs: 1\n"
                   "Exception: Capture cuda graph failed: CUDA error\n")
    capture, retract = to_results(explain_sources([log]))
    assert (capture.check_id, capture.status, capture.category) == ("QD-R-SGLANG-CUDA-GRAPH-CAPTURE", Status.FAIL, "sglang")
    assert capture.summary == f"1× at {log}:2" and capture.remedy_ids == [capture.check_id]
    assert "Lower --cuda-graph-max-bs-decode (--cuda-graph-max-bs was split per phase). [sglang>=0.5.23]" in capture.fix
    assert retract.status == Status.WARN and retract.evidence["first"]["line"] == 1
