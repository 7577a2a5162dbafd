"""A big log split across worker processes explains exactly as one process does: same lines, counts, context."""

from __future__ import annotations

import datetime as dt
import gzip
import multiprocessing
import os
import random
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from doctor.cli.explain import explain
from doctor.report import model as report_model
from remedies import Matcher, explain_sources, load_catalogue
from remedies import matcher as matcher_module
from remedies import explain as explain_module
from remedies import parallel
from remedies.reader import open_log

CHUNK = 1 << 16
MAX_LINE = 1 << 18
OOM = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB"


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 64 KiB and a 256 KiB line cap, so a few MiB make many chunks (workers are forked: they see it too)."""
    monkeypatch.setattr(matcher_module, "CHUNK", CHUNK)
    monkeypatch.setattr(matcher_module, "MAX_LINE", MAX_LINE)


def build_log(path: Path) -> tuple[int, int]:
    """About 50 chunks of log; every chunk ends with 'match, filler' so a match starts each chunk, and a
    huge line (2.5 line caps, a match inside and at its end) covers the middle. Returns the huge line's span."""
    rng = random.Random(11)
    # Stop markers end the report, so the findings after one would depend on where the seed drops it.
    samples = [s.encode() + b"\n" for r in load_catalogue() if not r.stop for s in r.samples]
    out = bytearray()
    grid = CHUNK
    huge: tuple[int, int] = (0, 0)
    while len(out) < 50 * CHUNK:
        if not huge[1] and len(out) >= 20 * CHUNK:
            line = b"h" * (MAX_LINE + 1000) + OOM + b"z" * (MAX_LINE + MAX_LINE // 2) + OOM + b"\n"
            huge = (len(out), len(out) + len(line))
            out += line
        room = grid - len(out)
        sample = rng.choice(samples)
        if 0 < room < 1500:
            if len(sample) + 1 < room:
                out += sample
            out += b"." * (grid - len(out) - 1) + b"\n" + rng.choice(samples)
        elif rng.random() < 0.04:
            out += sample
        else:
            out += f"INFO 12-02 10:{rng.randint(0, 59):02d} [loggers.py:123] Avg throughput: {rng.random():.3f}\n".encode()
        while grid <= len(out):
            grid += CHUNK
    path.write_bytes(bytes(out))
    return huge


@pytest.fixture
def big_log(tmp_path, small_chunks) -> tuple[Path, tuple[int, int]]:
    path = tmp_path / "server.log"
    return path, build_log(path)


def test_ranges_start_on_a_match_and_never_inside_the_huge_line(big_log):
    path, (huge_start, huge_end) = big_log
    data = path.read_bytes()
    ranges = parallel.plan_ranges(path, 4)
    assert len(ranges) == 4 and ranges[0].start == 0 and ranges[-1].end == len(data)
    assert all(a.end == b.start for a, b in zip(ranges, ranges[1:]))
    inner = [r.start for r in ranges[1:]]
    assert all(data[start - 1:start] == b"\n" and not huge_start < start < huge_end for start in inner)
    assert any(start > huge_end for start in inner) and any(start < huge_start for start in inner)
    matcher = Matcher()
    assert all(matcher.match_line(data[start:data.index(b"\n", start)].decode()) for start in inner)


def test_four_workers_find_the_same_matches_as_one_scan(big_log):
    path, _ = big_log
    matcher = Matcher()
    with open_log(path) as stream:
        single = list(matcher.scan(stream))
    split = parallel.scan_parallel(matcher, path, threshold=1, workers=4)
    assert split is not None
    matches, workers = split
    assert workers == 4
    assert len(single) > 60 and matches == single


@pytest.fixture
def frozen_clock(monkeypatch):
    fixed = dt.datetime(2026, 12, 2, tzinfo=dt.timezone.utc)
    clock = SimpleNamespace(datetime=SimpleNamespace(now=lambda tz=None: fixed), timezone=dt.timezone)
    monkeypatch.setattr(report_model, "dt", clock)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_explain_output_is_byte_identical_split_or_not(big_log, monkeypatch, frozen_clock, fmt):
    path, _ = big_log
    args = ["--format", fmt, "--context", "3", str(path)]
    monkeypatch.setenv(parallel.ENV_MIN_BYTES, str(10 << 30))
    single = CliRunner().invoke(explain, args)
    monkeypatch.setenv(parallel.ENV_MIN_BYTES, str(CHUNK))
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 3)
    used: list[int] = []

    def recording(*given, **options):
        result = parallel.scan_parallel(*given, **options)
        used.append(0 if result is None else result[1])
        return result

    monkeypatch.setattr(explain_module, "scan_parallel", recording)
    split = CliRunner().invoke(explain, args)
    assert used == [3]
    assert single.exit_code == split.exit_code == 1
    assert "QD-R-TORCH-CUDA-OOM" in single.output
    assert split.output == single.output


def test_without_fork_the_file_is_scanned_in_one_process(big_log, monkeypatch):
    path, _ = big_log
    expected = explain_sources([path], parallel_min_bytes=10 << 30)

    def no_fork(method):
        raise ValueError(f"cannot find context for {method!r}")

    monkeypatch.setattr(multiprocessing, "get_context", no_fork)
    assert parallel.scan_parallel(Matcher(), path, threshold=1, workers=4) is None
    assert explain_sources([path], parallel_min_bytes=1, workers=4) == expected


def test_a_worker_that_dies_leaves_the_scan_to_one_process(big_log, monkeypatch):
    path, _ = big_log
    expected = explain_sources([path], parallel_min_bytes=10 << 30)
    whole = Matcher.scan_range

    def dying_in_workers(self, stream, head=b"", stop=None, crashes=False, catalogue=True):
        if stop is not None:
            os._exit(3)
        return whole(self, stream, head, stop, crashes, catalogue)

    monkeypatch.setattr(Matcher, "scan_range", dying_in_workers)
    assert parallel.scan_parallel(Matcher(), path, threshold=1, workers=4) is None
    assert explain_sources([path], parallel_min_bytes=1, workers=4) == expected


def test_gzip_small_files_and_stdin_are_not_split(big_log, tmp_path):
    path, _ = big_log
    packed = tmp_path / "server.log.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    size = path.stat().st_size
    assert parallel.splittable(path, size // 2)
    assert not parallel.splittable(path, size // 2 + 1)
    assert not parallel.splittable(packed, 1)
    assert not parallel.splittable("-", 1)


def test_the_threshold_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(parallel.ENV_MIN_BYTES, raising=False)
    assert parallel.min_bytes() == 64 << 20
    monkeypatch.setenv(parallel.ENV_MIN_BYTES, "4096")
    assert parallel.min_bytes() == 4096
