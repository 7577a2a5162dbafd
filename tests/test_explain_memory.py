"""explain's memory stays bounded on pathological input (`yes ERROR | qwen-doctor explain -`): a chunk of
nothing but matching lines is matched a record at a time, lines holding the same needles share one label set,
and the collector counts matched lines instead of keeping them."""

from __future__ import annotations

import io
import tracemalloc
from pathlib import Path

import pytest

from remedies import Matcher, needlescan
from remedies.explain import Collector

LINE = b"RuntimeError: CUDA error: out of memory\n"


def _scan_peak(data: bytes, matcher: Matcher) -> tuple[int, Collector]:
    collector = Collector()
    tracemalloc.start()
    try:
        for match in matcher.scan(io.BytesIO(data), crashes=True):
            collector.add(match, "stream")
        return tracemalloc.get_traced_memory()[1], collector
    finally:
        tracemalloc.stop()


def test_a_megabyte_of_matching_lines_is_scanned_in_a_bounded_amount_of_memory() -> None:
    matcher = Matcher(context=2)
    data = LINE * ((1 << 20) // len(LINE))
    peak, collector = _scan_peak(data, matcher)
    # Before the bound, each matching line kept its own set of a few hundred labels and the chunk's records
    # were all built before the first was matched: about 110 MiB for this megabyte.
    assert peak < 24 << 20, f"{peak / (1 << 20):.0f} MiB"
    assert collector.matched_lines == data.count(b"\n")
    (finding,) = [f for f in collector.findings() if f.count > 1]
    assert finding.count == data.count(b"\n") and finding.first.line == 1


@pytest.mark.parametrize("log", sorted((Path(__file__).parent / "data" / "logs").glob("*.log"))[:40],
                         ids=lambda p: p.name)
def test_scanning_in_small_windows_finds_what_one_window_finds(log: Path, monkeypatch) -> None:
    matcher = Matcher(context=2)
    data = log.read_bytes()
    whole = [(m.remedy.id, m.lineno) for m in matcher.scan(io.BytesIO(data), crashes=True)]
    monkeypatch.setattr(needlescan, "WINDOW", 256)
    assert [(m.remedy.id, m.lineno) for m in matcher.scan(io.BytesIO(data), crashes=True)] == whole
