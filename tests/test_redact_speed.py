"""Redaction stays linear on adversarial input: a guard with a generous bound (the ratio lives in bench/)."""

from __future__ import annotations

import time

import pytest

from doctor.facts import collect as collect_mod
from doctor.facts.probes import env
from doctor.redact import redact_document, redact_text
from tests.support.redact_inputs import PIECES, adversarial, single_runs

SIZE = 200_000
BOUND_S = 2.0


def _seconds(fn, *args, **kwargs) -> float:
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t0


@pytest.mark.parametrize("piece", PIECES)
def test_repeated_pattern_starts_are_redacted_in_bounded_time(piece: str):
    text = adversarial(piece, SIZE)
    assert _seconds(redact_text, text) < BOUND_S
    assert _seconds(redact_document, {"log": [text], "hostname": "node-1"}, hosts=True, visible=True) < 2 * BOUND_S


@pytest.mark.parametrize("index", range(len(single_runs(1))))
def test_one_long_run_after_a_start_is_redacted_in_bounded_time(index: int):
    text = single_runs(SIZE)[index]
    assert _seconds(redact_text, text) < BOUND_S
    assert _seconds(redact_document, {"log": [text]}, hosts=True, visible=True) < 2 * BOUND_S


def test_a_huge_env_value_keeps_the_env_probe_well_inside_its_timeout():
    environ = {"VLLM_EXTRA": adversarial("--api_key ", 1 << 20), "HF_ENDPOINT": adversarial("://a:b", 1 << 20)}
    facts = collect_mod.collect({"env": lambda: env.probe(environ)}, timeout_s=10)
    assert facts.data["probes"]["env"]["status"] == "ok"
    assert facts.data["probes"]["env"]["seconds"] < 5
    assert len(facts.data["env"]["VLLM_EXTRA"]) < env.MAX_VALUE + 64
