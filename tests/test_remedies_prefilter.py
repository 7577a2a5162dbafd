"""The file scan's level-1 needles: computed from the catalogue, they let no entry's line through unseen."""

from __future__ import annotations

import io
import random

import pytest

from remedies import Matcher, load_catalogue
from remedies.crash import LITERALS as CRASH_LITERALS
from remedies.prefilter import HEALTHY_SAMPLE, Profile, plan_prefilter


@pytest.fixture(scope="module")
def needles() -> list[str]:
    return Matcher().needles


def test_every_literal_contains_a_needle(needles):
    for remedy in load_catalogue():
        assert any(n in remedy.literal for n in needles), remedy.id


def test_every_sample_line_contains_a_needle(needles):
    for remedy in load_catalogue():
        for sample in remedy.samples:
            assert any(n in sample for n in needles), (remedy.id, sample)


def test_a_new_literal_is_covered_without_editing_any_list():
    literals = sorted({r.literal for r in load_catalogue()}) + ["Zygote quux wedged"]
    planned = plan_prefilter(literals, Profile(HEALTHY_SAMPLE.read_bytes()))
    assert all(any(n in lit for n in planned) for lit in literals)


def test_needles_are_predicted_cheaper_to_scan_than_one_pass_per_anchor_and_crash_marker(needles):
    profile = Profile(HEALTHY_SAMPLE.read_bytes())
    passes = Matcher().anchors + list(CRASH_LITERALS)
    assert len(needles) < len(passes)
    assert sum(profile.cost(n.encode()) for n in needles) < sum(profile.cost(a.encode()) for a in passes)


def test_substrings_frequent_in_healthy_logs_cost_more_than_rare_ones_of_the_same_length():
    profile = Profile(b"INFO Available KV cache memory: 20.51 GiB\n" * 50)
    assert profile.cost(b"memory") > profile.cost(b"Errno ")


def test_lines_full_of_needles_and_samples_scan_exactly_like_every_regex_on_every_line(needles):
    rng = random.Random(11)
    samples = [s for r in load_catalogue() for s in r.samples]
    lines = []
    for _ in range(1500):
        noise = " ".join(rng.choice(needles) for _ in range(rng.randint(1, 4)))
        # each line a record of its own (a logger prefix), so that no line continues the one before it
        lines.append(f"INFO 05-31 09:09:48 [t.py:1] {noise} {rng.choice(samples)}" if rng.random() < 0.3
                     else f"INFO 05-31 09:09:48 [t.py:1] {noise} done")
    data = "\n".join(lines).encode()
    # A line an entry with a `context` matches is decided by the lines before it (remedies.matcher
    # with_context: the contextual entry, when its context holds, replaces the generic one), which this
    # line-by-line model does not follow: such lines are left out of both sides.
    contextual = {lineno for lineno, line in enumerate(lines, start=1) for r in load_catalogue() for f in r.forms()
                  if f.context_regex is not None and f.literal in line and f.regex.search(line)}
    expected = [
        (lineno, r.id)
        for lineno, line in enumerate(lines, start=1)
        for r in load_catalogue()
        if any(f.literal in line for f in r.forms()) and r.regex.search(line)
        and r.context is None and lineno not in contextual  # no line here has a traceback
    ]
    found = [(m.lineno, m.remedy.id) for m in Matcher().scan(io.BytesIO(data)) if m.lineno not in contextual]
    assert sorted(found) == sorted(expected) and len(expected) > 400
