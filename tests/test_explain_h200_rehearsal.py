"""`explain` on the SGLang 0.5.16 logs recorded on an H200 (tests/fixtures/h200-rehearsal/): each real start
failure is named by its own entry, with the fix rendered from the log's figures, and a healthy run, whose
multimodal import probe logs torchcodec's tracebacks and carries on, gives no finding until it is stopped."""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import Matcher, explain_sources

REHEARSAL = Path(__file__).parent / "fixtures" / "h200-rehearsal"
GDN_FRAMES = """\
  File "/tmp/site/sglang/srt/models/qwen3_5.py", line 226, in __init__
    self.in_proj_ba = self.create_ba_proj(
  File "/tmp/site/sglang/srt/layers/quantization/fp8.py", line 498, in validate_block_quant_shapes
    raise ValueError(
"""
TP_FRAMES = """\
  File "/workspace/sglang/python/sglang/srt/layers/linear.py", line 358, in __init__
    self.quant_method.create_weights(
  File "/workspace/sglang/python/sglang/srt/layers/quantization/fp8.py", line 498, in validate_block_quant_shapes
    raise ValueError(
"""
BLOCK = "ValueError: Weight output_partition_size = {size} is not divisible by weight quantization block_n = 128.\n"


def findings(path: Path) -> list:
    return explain_sources([path])


@pytest.mark.parametrize(("log", "remedy_id"), [
    ("sglang-transformers-5.17.log", "QD-R-HF-TRANSFORMERS-CONFIG-TAKEN"),
    ("sglang-tokenizers-pin.log", "QD-R-HF-TRANSFORMERS-DEPENDENCY-VERSION"),
    ("sglang-rope-keyerror.log", "QD-R-SGLANG-ROPE-THETA-MISSING"),
    ("sglang-fp8-gdn-gate-block.log", "QD-R-VLLM-FP8-BLOCK-UNQUANTISED-LAYER"),
])
def test_each_recorded_start_failure_is_named_first_by_its_own_entry(log, remedy_id):
    found = findings(REHEARSAL / log)
    assert found[0].remedy.id == remedy_id
    assert "QD-R-UNKNOWN" not in [f.remedy.id for f in found]


def test_the_transformers_pin_fix_names_the_model_type_registered_twice():
    (finding,) = findings(REHEARSAL / "sglang-transformers-5.17.log")
    assert finding.first.line == 18
    assert 'pip install "transformers==5.12.1"' in finding.steps[0].text and "'qwen3_asr'" in finding.steps[0].text
    assert finding.steps[0].applies == "sglang>=0.5.15,<0.5.22"


def test_the_dependency_fix_installs_a_version_inside_the_logged_range():
    (finding,) = findings(REHEARSAL / "sglang-tokenizers-pin.log")
    assert finding.steps[0].text.startswith('pip install "tokenizers>=0.22.0,<=0.23.0"')
    assert "tokenizers==0.23.2 is installed" in finding.steps[0].text


def test_the_rope_fix_gives_the_qwen35_rope_parameters():
    finding = findings(REHEARSAL / "sglang-rope-keyerror.log")[0]
    assert '"rope_theta": 10000000' in finding.steps[0].text and '"mrope_section": [11, 11, 10]' in finding.steps[0].text


def test_the_fp8_gate_fix_names_the_layer_and_says_the_tp_size_is_not_the_cause():
    finding = findings(REHEARSAL / "sglang-fp8-gdn-gate-block.log")[0]
    assert finding.first.line == 735
    assert finding.steps[0].text.startswith("The failing layer is in_proj_ba (32 output channels, under one 128-wide block)")
    assert "modules_to_not_convert" in finding.steps[0].text
    assert "QD-R-VLLM-FP8-BLOCK-TP" not in [f.remedy.id for f in findings(REHEARSAL / "sglang-fp8-gdn-gate-block.log")]


@pytest.mark.parametrize(("frames", "size", "remedy_id"), [
    (GDN_FRAMES, 32, "QD-R-VLLM-FP8-BLOCK-UNQUANTISED-LAYER"),
    (TP_FRAMES, 64, "QD-R-VLLM-FP8-BLOCK-TP"),
    ("", 64, "QD-R-VLLM-FP8-BLOCK-TP"),
])
def test_the_two_block_fp8_causes_are_told_apart_by_the_layer_in_the_traceback(tmp_path, frames, size, remedy_id):
    log = tmp_path / "server.log"
    log.write_text("Traceback (most recent call last):\n" + frames + BLOCK.format(size=size))
    assert [f.remedy.id for f in explain_sources([log])] == [remedy_id]
    live = Matcher()
    lines = log.read_text().splitlines(keepends=True)
    fed = [m.remedy.id for n, line in enumerate(lines, start=1) for m in live.feed(line, n)]
    assert fed == [remedy_id]


def test_the_tp_fix_states_the_per_rank_size_against_the_block():
    log_text = "ValueError: The output_size of gate's and up's weight = 192 is not divisible by weight quantization block_n = 128."
    (match,) = Matcher().feed(log_text, 1)
    assert match.remedy.id == "QD-R-VLLM-FP8-BLOCK-TP"
    assert match.fix[0].text.startswith("192 channels per rank is not a whole number of 128-wide blocks")


@pytest.mark.parametrize("log", ["sglang-bf16-vision.log", "sglang-fp8-vision.log"])
def test_a_healthy_run_with_the_torchcodec_import_probe_gives_no_finding_before_it_is_stopped(tmp_path, log):
    lines = (REHEARSAL / log).read_bytes().split(b"\n")
    stop = next(i for i, line in enumerate(lines) if b"SIGTERM received" in line)
    assert sum(b"Traceback (most recent call last)" in line for line in lines[:stop]) >= 30
    served = tmp_path / log
    served.write_bytes(b"\n".join(lines[:stop]) + b"\n")
    assert explain_sources([served]) == []


@pytest.mark.parametrize("name", ["sglang-bf16-vision", "sglang-fp8-vision", "vllm-bf16-vision"])
def test_a_whole_log_that_ends_in_an_intended_stop_explains_to_nothing(name: str) -> None:
    # SGLang 0.5.16 reports its own scheduler as "crashed with exit code -15" after SIGTERM; vLLM force-kills
    # the remaining workers: the stop's doing, not a failure
    log = REHEARSAL / f"{name}.log"
    assert "SIGTERM" in log.read_text()
    assert explain_sources([log]) == []


def test_findings_before_the_stop_request_still_count(tmp_path) -> None:
    log = tmp_path / "oom-then-stop.log"
    log.write_text("[2026-12-03 06:05:00] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
                   "GPU 0 has a total capacity of 139.81 GiB of which 1.00 GiB is free.\n"
                   "[2026-12-03 06:05:32] SIGTERM received. signum=None frame=None. Draining requests and shutting down...\n"
                   "[2026-12-03 06:05:33] Subprocess scheduler_0 (pid=1927) crashed with exit code -15. Triggering SIGQUIT for cleanup...\n")
    ids = [f.remedy.id for f in explain_sources([log])]
    assert ids and "OOM" in ids[0] and "QD-R-UNKNOWN" not in ids


def test_the_live_watch_stops_matching_at_a_stop_request() -> None:
    from doctor.deploy.remedy import RemedyWatch

    watch = RemedyWatch()
    lines = (REHEARSAL / "sglang-bf16-vision.log").read_text(errors="replace").splitlines()
    for n, line in enumerate(lines, 1):
        watch.feed(line, n)
    assert watch.stop_line is not None and "SIGTERM received" in lines[watch.stop_line - 1]
    assert watch.hits == []
