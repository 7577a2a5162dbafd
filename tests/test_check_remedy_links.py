"""Every remedy id a check points to exists in the catalogue, so `remedies show ID` always answers."""

from __future__ import annotations

import pytest

from remedies import load_catalogue
from tests.conftest import load_fixture, run

FIXTURES = ["h200", "a100-8x-nvlink", "a100-8x-nvlink-degraded", "old-driver", "v100", "mig", "no-driver",
            "pcie-4x-l40s-docker"]


@pytest.mark.parametrize("name", FIXTURES)
def test_remedy_ids_on_results_resolve_in_the_catalogue(name: str):
    known = {entry.id for entry in load_catalogue()}
    for results in run(load_fixture(name), backend="vllm", model="Qwen/Qwen3.5-35B-A3B-FP8").values():
        for r in results:
            assert set(r.remedy_ids) <= known, (r.check_id, r.remedy_ids)


def test_failures_that_have_a_documented_log_message_link_it():
    results = run(load_fixture("v100"), only=("QD-GPU-002", "QD-GPU-004"))
    assert results["QD-GPU-002"][0].remedy_ids == ["QD-R-VLLM-BF16-CAPABILITY"]
    assert results["QD-GPU-004"][0].remedy_ids == ["QD-R-CUDA-NO-KERNEL-IMAGE"]
    assert run(load_fixture("old-driver"), only=("QD-DRV-002",))["QD-DRV-002"][0].remedy_ids == ["QD-R-TORCH-DRIVER-TOO-OLD"]
