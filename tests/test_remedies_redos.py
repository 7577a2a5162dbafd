"""No catalogue regex backtracks catastrophically: checked statically and timed on 1 MiB near-miss lines."""

from __future__ import annotations

import re
import time

import pytest

try:
    from re import _parser as sre_parse  # type: ignore[attr-defined]
    from re._constants import MAXREPEAT  # type: ignore[attr-defined]
except ImportError:  # Python < 3.11
    import sre_parse  # type: ignore[no-redef]
    from sre_constants import MAXREPEAT  # type: ignore[no-redef]

from remedies import load_catalogue
from remedies.matcher import MAX_LINE
from remedies.normalise import _ANSI, _QUOTE, _RECORD, _STARTS_RECORD, _TRANSPORT, _WINDOWS_PATH

ENTRIES = list(load_catalogue())
NORMALISERS = [_ANSI, _QUOTE, _RECORD, _STARTS_RECORD, _TRANSPORT, _WINDOWS_PATH]
BOUND_S = 8.0  # per pattern over all its adversarial lines; a quadratic pattern takes minutes on 1 MiB


def _repeats(tree, inside_unbounded: bool = False) -> list[str]:
    """Descriptions of unbounded repeats nested inside another unbounded repeat."""
    found = []
    for op, arg in tree:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, body = arg
            unbounded = high == MAXREPEAT
            if unbounded and inside_unbounded:
                found.append(f"{name}({low}, unbounded) inside an unbounded repeat")
            found += _repeats(body, inside_unbounded or unbounded)
        elif name in ("SUBPATTERN",):
            found += _repeats(arg[-1], inside_unbounded)
        elif name == "BRANCH":
            for branch in arg[1]:
                found += _repeats(branch, inside_unbounded)
        elif name in ("ASSERT", "ASSERT_NOT"):
            found += _repeats(arg[1], inside_unbounded)
    return found


def test_the_static_check_rejects_nested_unbounded_quantifiers():
    assert _repeats(sre_parse.parse(r"(a+)+b"))
    assert _repeats(sre_parse.parse(r"(?:\w+\s?)*x"))
    assert not _repeats(sre_parse.parse(r"(?:\w{1,8}\s?){0,5}x"))
    assert not _repeats(sre_parse.parse(r"max seq len \((?P<n>\d+)\)"))


@pytest.mark.parametrize("remedy", ENTRIES, ids=[r.id for r in ENTRIES])
def test_no_catalogue_pattern_nests_unbounded_quantifiers(remedy):
    assert _repeats(sre_parse.parse(remedy.pattern)) == []


@pytest.mark.parametrize("pattern", NORMALISERS, ids=[str(i) for i in range(len(NORMALISERS))])
def test_no_normalisation_pattern_nests_unbounded_quantifiers(pattern):
    assert _repeats(sre_parse.parse(pattern.pattern)) == []


def near_misses(sample: str, literal: str) -> list[str]:
    """1 MiB lines that almost match: the sample cut short and repeated (each copy restarts the search),
    and the start of the sample followed by a long run of what its quantifiers accept."""
    lines = []
    for cut in {len(sample) // 2, len(sample) - 1, sample.find(literal) + len(literal)}:
        piece = sample[:max(cut, 1)]
        lines.append((piece * (MAX_LINE // len(piece) + 1))[:MAX_LINE])
    head = sample[:len(sample) // 2]
    lines += [head + filler * (MAX_LINE - len(head)) for filler in ("x", "1", " ", ".")]
    return [literal + " " + line[:MAX_LINE - len(literal) - 1] for line in lines]


def timed(regex: re.Pattern[str], lines: list[str]) -> float:
    start = time.perf_counter()
    for line in lines:
        regex.search(line)
    return time.perf_counter() - start


def test_the_timing_check_catches_a_quadratic_pattern():
    quadratic = re.compile(r"Xid.*GPU has fallen off the bus")
    line = ("Xid " * (MAX_LINE // 64))  # a quarter of a MiB is enough to be slow
    assert timed(quadratic, [line]) > 10 * timed(re.compile(r"Xid\b[^\n]{0,160}GPU has fallen off the bus"), [line])


@pytest.mark.parametrize("remedy", ENTRIES, ids=[r.id for r in ENTRIES])
def test_each_pattern_runs_in_linear_time_on_adversarial_lines(remedy):
    lines = near_misses(remedy.samples[0], remedy.literal)
    assert timed(remedy.regex, lines) < BOUND_S


def test_normalising_adversarial_lines_is_linear():
    from remedies.normalise import normalise

    lines = ["(pid=1 " * (MAX_LINE // 7), "[" + "2026-12-03 10:00:00 " * (MAX_LINE // 20), "> " * (MAX_LINE // 2),
             "C:\\" + "a\\" * (MAX_LINE // 2), "\x1b[" + "1;" * (MAX_LINE // 2), "vllm-1 " + " " * MAX_LINE]
    start = time.perf_counter()
    for line in lines:
        normalise(line)
    assert time.perf_counter() - start < BOUND_S
