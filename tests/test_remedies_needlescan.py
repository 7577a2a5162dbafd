"""The file scan's needle pass: one pass over a chunk finds every line holding a needle, and a line holding
none costs no per-line or per-entry work."""

from __future__ import annotations

import io
import random
import re
from dataclasses import dataclass, replace

import pytest

from remedies import Matcher, load_catalogue
from remedies import matcher as matcher_module
from remedies.loader import Catalogue
from remedies.needlescan import NeedleScan


def per_needle_passes(plan: list[tuple[bytes, frozenset[int]]], chunk: bytes, limit: int) -> dict[int, set[int]]:
    """The line starts one `bytes.find` pass per needle finds (the scan before the one-pass automaton, kept as
    the fallback where ahocorasick_rs is missing)."""
    return NeedleScan(plan)._line_starts_by_find(chunk, limit)


def test_the_one_pass_finds_the_lines_and_labels_of_one_pass_per_needle():
    rng = random.Random(5)
    # Needles inside others, sharing prefixes and suffixes, repeated under two labels, next to each other.
    plan = [(b"error", frozenset({0})), (b"Error", frozenset({1})), (b"CUDA error", frozenset({2})),
            (b"rror: ", frozenset({3})), (b"NCCL WARN", frozenset({4})), (b"error", frozenset({5})),
            (b"WARN", frozenset({6})), (b"out of memory", frozenset({7})), (b"ory", frozenset({8}))]
    words = [b"error", b"Error", b"CUDA", b"NCCL", b"WARN", b"out", b"of", b"memory", b"rror:", b"x", b"", b"\n"]
    for _ in range(300):
        chunk = b" ".join(rng.choice(words) for _ in range(rng.randint(0, 60)))
        limit = rng.randint(0, len(chunk))
        assert NeedleScan(plan).line_starts(bytearray(chunk), limit) == per_needle_passes(plan, chunk, limit), \
            (chunk, limit)


def test_a_needle_cut_by_the_scanned_length_is_not_found():
    scan = NeedleScan([(b"out of memory", frozenset({1}))])
    data = bytearray(b"ok\nCUDA out of memory\n")
    assert scan.line_starts(data, len(data)) == {3: {1}}
    assert scan.line_starts(data, len(data) - 3) == {}
    assert NeedleScan([]).line_starts(data, len(data)) == {}


class CountingPattern:
    """A compiled pattern that counts its searches."""

    def __init__(self, pattern: re.Pattern[str], calls: list[str]) -> None:
        self._pattern, self._calls = pattern, calls
        self.pattern, self.flags = pattern.pattern, pattern.flags

    def search(self, text: str, *args: int) -> re.Match[str] | None:
        self._calls.append(text)
        return self._pattern.search(text, *args)


@dataclass
class Counted:
    matcher: Matcher
    searches: list[str]


@pytest.fixture()
def counted() -> Counted:
    """A matcher over the shipped catalogue whose entries count their regex searches."""
    searches: list[str] = []
    entries = tuple(replace(r, regex=CountingPattern(r.regex, searches),
                            variants=tuple(replace(v, regex=CountingPattern(v.regex, searches)) for v in r.variants))
                    for r in load_catalogue())
    return Counted(Matcher(Catalogue(entries)), searches)


HEALTHY = [
    "INFO 12-05 04:00:01 [loader.py:447] Loading weights took 12.50 seconds",
    "INFO 12-05 04:00:02 [kv_cache_utils.py:1087] GPU KV cache size: 1,234,567 tokens",
    '(APIServer pid=7) INFO:     127.0.0.1:40000 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "[2026-12-02 10:00:00 TP0] Decode batch, #running-req: 3, #token: 9000, token usage: 0.04, #queue-req: 0",
]


def healthy_log(lines: int) -> bytes:
    return ("\n".join(HEALTHY[i % len(HEALTHY)] for i in range(lines)) + "\n").encode()


def test_lines_without_a_needle_reach_no_normalising_and_no_entry_pattern(counted, monkeypatch):
    normalised: list[str] = []
    real = matcher_module.normalise
    monkeypatch.setattr(matcher_module, "normalise", lambda text: normalised.append(text) or real(text))
    assert not any(n in line for n in counted.matcher.needles for line in HEALTHY)
    assert list(counted.matcher.scan(io.BytesIO(healthy_log(20000)))) == []
    assert normalised == [] and counted.searches == []


def test_only_the_line_holding_a_needle_reaches_the_entry_patterns(counted):
    sample = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    lines = healthy_log(20000).decode().splitlines()
    lines.insert(12345, sample)
    found = list(counted.matcher.scan(io.BytesIO(("\n".join(lines) + "\n").encode())))
    assert [m.lineno for m in found] and {m.lineno for m in found} == {12346}
    assert counted.searches and set(counted.searches) <= {sample}


class CountingBuffer(bytearray):
    """The scan's chunk buffer, counting the byte searches made over it."""

    finds = 0

    def find(self, *args):  # type: ignore[no-untyped-def, override]
        CountingBuffer.finds += 1
        return super().find(*args)


@pytest.mark.parametrize("entries", [10, 80, None])
def test_a_chunk_without_a_needle_costs_no_byte_search_whatever_the_number_of_needles(entries, monkeypatch):
    catalogue = load_catalogue()
    matcher = Matcher(Catalogue(catalogue.entries[:entries]))
    monkeypatch.setattr(matcher_module, "bytearray", CountingBuffer, raising=False)
    CountingBuffer.finds = 0
    assert list(matcher.scan(io.BytesIO(healthy_log(50000)))) == []
    assert len(matcher.needles) >= min(entries or 100, 10) and CountingBuffer.finds == 0


def test_a_scan_for_crashes_leaves_the_catalogue_scan_as_it_was(monkeypatch):
    """Scanning a stream for crashes and entries at once (stdin) once grew the catalogue scan's needle list by
    the crash markers at every chunk, so every later scan with that matcher read the markers' lines too."""
    matcher = Matcher()
    markers = "Traceback (most recent call last):\n  File \"/srv/app.py\", line 3, in serve\n    serve()\nqueue.Empty\n"
    assert not any(n in markers for n in matcher.needles)
    log = (healthy_log(20000).decode() + markers).encode() * 3  # over WRAP_SCAN_BYTES: the catalogue needles
    assert any(m.crash is not None for m in matcher.scan(io.BytesIO(log), crashes=True))
    normalised: list[str] = []
    real = matcher_module.normalise
    monkeypatch.setattr(matcher_module, "normalise", lambda text: normalised.append(text) or real(text))
    assert list(matcher.scan(io.BytesIO(log))) == [] and normalised == []


def test_without_the_automaton_library_the_same_lines_are_found(monkeypatch):
    """An environment without ahocorasick_rs (set up before it became a dependency, or a platform with no wheel)
    scans with one pass per needle and finds the same lines and labels."""
    import remedies.needlescan as needlescan

    plan = [(b"CUDA error", frozenset({0})), (b"rror", frozenset({1})), (b"NCCL WARN", frozenset({2}))]
    chunk = b"ok\nCUDA error: x\nNCCL WARN y\nterror\nnothing\n"
    with_automaton = NeedleScan(plan).line_starts(chunk, len(chunk))
    monkeypatch.setattr(needlescan, "BytesAhoCorasick", None)
    without = needlescan.NeedleScan(plan)
    assert without._automaton is None
    assert without.line_starts(chunk, len(chunk)) == with_automaton == per_needle_passes(plan, chunk, len(chunk))
