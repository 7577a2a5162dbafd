"""Scan one big regular file in several forked processes, with the same result as one `Matcher.scan`.

`Matcher.scan` reads CHUNK bytes at a time, so its reads end at multiples of CHUNK, and each chunk it
scans ends just after the last newline before such a multiple (the grid point). The file is split at
some of these chunk ends: a worker starting at byte `start` first reads up to the grid point after it
(the partial line the single scan would carry over), then reads and scans exactly as the single scan
does until it reaches its range's end. Its chunks are therefore the single scan's chunks (context lines,
pieces of huge lines and all), and the parent only shifts each range's line numbers by the newlines
before it. stdin, gzip and files under twice the threshold are not split; without the fork start method,
or when a worker fails, the caller scans in one process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from remedies import matcher as matcher_module
from remedies.crash import Crash
from remedies.matcher import Match, Matcher
from remedies.model import UNKNOWN
from remedies.reader import GZIP_MAGIC, STDIN

ENV_MIN_BYTES = "QWEN_DOCTOR_EXPLAIN_PARALLEL_MIN_BYTES"
DEFAULT_MIN_BYTES = 64 << 20

_Found = tuple[str, int, str, tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...], Crash | None]
_worker_matcher: Matcher | None = None


@dataclass(frozen=True)
class Range:
    """Bytes [start, end) of the file; [start, grid) is read before the first chunk, as a carried partial line."""

    start: int
    grid: int
    end: int


def min_bytes() -> int:
    """The size per worker from which a file is split: $QWEN_DOCTOR_EXPLAIN_PARALLEL_MIN_BYTES or 64 MiB."""
    value = os.environ.get(ENV_MIN_BYTES, "")
    return int(value) if value.isdigit() and int(value) > 0 else DEFAULT_MIN_BYTES


def _chunk_end(file: int, grid: int) -> int | None:
    """Where the single scan's chunk read up to `grid` ends: after its last newline; None without one."""
    window = os.pread(file, matcher_module.CHUNK, grid - matcher_module.CHUNK)
    last = window.rfind(b"\n")
    return None if last < 0 else grid - matcher_module.CHUNK + last + 1


def plan_ranges(path: Path, parts: int) -> list[Range]:
    """Split the file into at most `parts` ranges at chunk ends near equal shares (fewer when lines are huge)."""
    chunk, size = matcher_module.CHUNK, path.stat().st_size
    cuts: list[tuple[int, int]] = []
    with open(path, "rb") as handle:
        for part in range(1, parts):
            grid = max(round(size * part / parts / chunk) * chunk, cuts[-1][1] + chunk if cuts else chunk)
            while grid < size:
                end = _chunk_end(handle.fileno(), grid)
                if end is not None and (not cuts or end > cuts[-1][0]):
                    cuts.append((end, grid))
                    break
                grid += chunk
    bounds = [(0, 0), *cuts, (size, size)]
    return [Range(start, grid, end) for (start, grid), (end, _) in zip(bounds, bounds[1:])]


def _scan_range(task: tuple[str, Range, bool, bool]) -> tuple[list[_Found], int]:
    """In a worker: the matches of one range (line numbers from 1) and its newline count."""
    path, part, crashes, catalogue = task
    assert _worker_matcher is not None
    with open(path, "rb", buffering=0) as stream:
        head = os.pread(stream.fileno(), part.grid - part.start, part.start)
        stream.seek(part.grid)
        scan = _worker_matcher.scan_range(stream, head, part.end - part.start, crashes=crashes,  # type: ignore[arg-type]
                                           catalogue=catalogue)
        found: list[_Found] = []
        while True:
            try:
                m = next(scan)
            except StopIteration as stop:
                return found, stop.value
            found.append((m.remedy.id, m.lineno, m.line, m.before, m.after, m.values, m.crash))


def splittable(source: str | Path, threshold: int) -> bool:
    """A regular, uncompressed file of at least two shares of `threshold` bytes."""
    if str(source) == STDIN:
        return False
    try:
        path = Path(source)
        if not path.is_file() or path.stat().st_size < 2 * threshold:
            return False
        with open(path, "rb") as handle:
            return handle.read(2) != GZIP_MAGIC
    except OSError:
        return False


def scan_parallel(
    matcher: Matcher, source: str | Path, threshold: int | None = None, workers: int | None = None,
    crashes: bool = False, catalogue: bool = True,
) -> tuple[list[Match], int] | None:
    """All matches of a big file in line order and the worker count, or None to scan in one process.
    `crashes` and `catalogue` as for `Matcher.scan`."""
    global _worker_matcher
    threshold = threshold or min_bytes()
    if not splittable(source, threshold):
        return None
    path = Path(source)
    parts = workers or min(os.cpu_count() or 1, path.stat().st_size // threshold)
    if parts < 2:
        return None
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    try:
        context = multiprocessing.get_context("fork")
        ranges = plan_ranges(path, parts)
        if len(ranges) < 2:
            return None
        _worker_matcher = matcher
        with ProcessPoolExecutor(len(ranges), mp_context=context) as pool:
            results = list(pool.map(_scan_range, [(str(path), part, crashes, catalogue) for part in ranges]))
    except Exception:  # noqa: BLE001 - a failed or killed worker: the caller scans in one process, which reports errors
        return None
    finally:
        _worker_matcher = None
    by_id = {remedy.id: remedy for remedy in matcher.catalogue}
    by_id[UNKNOWN.id] = UNKNOWN
    matches: list[Match] = []
    offset = 0
    for found, newlines in results:
        matches.extend(Match(by_id[rid], offset + number, line, before, after, values,
                             crash and replace(crash, lineno=offset + crash.lineno))
                       for rid, number, line, before, after, values, crash in found)
        offset += newlines
    return matches, len(ranges)
