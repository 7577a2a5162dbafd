"""The families added from the components' own message templates stay true to the mined source.

Each entry below names the templates it was written from (remedies/signatures/<component>.json, mined by
scripts/mine_components.py): the template must still be in the mined data, and the entry must match it rendered
with sample values. The extractors for C (NCCL) and Go (the NVIDIA container toolkit) are checked on small
sources.
"""

from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from remedies import load_catalogue

ROOT = Path(__file__).resolve().parents[1]
SIGNATURES = ROOT / "remedies" / "signatures"
sys.path.insert(0, str(ROOT / "scripts"))

import mine_components  # noqa: E402
import mine_signatures  # noqa: E402

CLAIMS = [
    ("QD-R-SGLANG-PD-TRANSFER-FAILED", "sglang_disaggregation",
     "Lost connection with prefill instance (bootstrap_addr: {}), {} requests affected"),
    ("QD-R-SGLANG-PD-TRANSFER-FAILED", "sglang_disaggregation",
     "Transfer thread failed because of {}. Prefill instance with bootstrap_port={} is dead."),
    ("QD-R-SGLANG-PD-TRANSFER-FAILED", "sglang_disaggregation",
     "Prefill transfer failed for request rank={} req.rid={} req.bootstrap_room={} with exception {}"),
    ("QD-R-SGLANG-PD-BOOTSTRAP", "sglang_disaggregation", "Could not fetch prefill parallel info from bootstrap_addr: {}"),
    ("QD-R-SGLANG-PD-BOOTSTRAP", "sglang_disaggregation", "Error fetching prefill server info from bootstrap: {}"),
    ("QD-R-SGLANG-PD-BOOTSTRAP", "sglang_disaggregation", "Prefill instance failed to register to bootstrap server after {} retries"),
    ("QD-R-SGLANG-PD-TP-MISMATCH", "sglang_disaggregation",
     "PD Disaggregation does NOT support PD different TP sizes for non-MLA {} hybrid models yet."),
    ("QD-R-SGLANG-PD-TP-MISMATCH", "sglang_disaggregation",
     "PD state transfer does not support TP-mismatched non-MLA SWA models (prefill_tp_size={}, decode_tp_size={})"),
    ("QD-R-SGLANG-PD-CONFIG-MISMATCH", "sglang_disaggregation",
     "Page size mismatch: prefill server has page_size={}, but decode server has page_size={}. Both servers must use "
     "the same --page-size value."),
    ("QD-R-VLLM-PD-KV-LAYOUT", "vllm_kv_transfer",
     "Heterogeneous TP expects same kv_cache_layout. Or enable experimental feature to use HND to NHD support by setting "
     "'enable_permute_local_kv'=True in --kv-transfer-config."),
    ("QD-R-VLLM-PD-TP-MISMATCH", "vllm_kv_transfer",
     "Currently, only symmetric TP is supported. Asymmetric TP, PP,and others will be supported in future PRs."),
    ("QD-R-VLLM-KV-ROLE", "vllm_kv_transfer", "Please specify kv_role when kv_connector is set, supported roles are {}"),
    ("QD-R-VLLM-KV-ROLE", "vllm_kv_transfer", "Unsupported kv_role: {}. Supported roles are {}"),
    ("QD-R-VLLM-NIXL-UNAVAILABLE", "vllm_kv_transfer", "NIXL is not available"),
    ("QD-R-CUDA-FLASHINFER-ARCH", "flashinfer", "No supported CUDA architectures found for major versions {}."),
    ("QD-R-VLLM-TRL-SERVER", "trl",
     "The vLLM server can't be reached at {} after {} seconds. Make sure the server is running by running `trl vllm-serve`."),
    ("QD-R-VLLM-INTEGRATION-MISMATCH", "verl",
     "vllm version {} not supported. Currently supported versions are 0.3.1, 0.4.2, 0.5.4, 0.6.3 and 0.7.0+"),
    ("QD-R-RAY-NO-GPU-ON-DRIVER", "vllm",
     "Current node has no {} available. current_node_resource={}. vLLM engine cannot start without {}. Make sure you "
     "have at least 1 {} available in a node current_node_id={} current_ip={}."),
    ("QD-R-RAY-DUPLICATE-NODE-IP", "vllm",
     "Every node should have a unique IP address. Got {} nodes with node ids {} and {} unique IP addresses {}. Please "
     "check your network configuration. If you set `VLLM_HOST_IP` environment variable, make sure it is unique for "
     "each node."),
]
RAISED_ONLY = {"QD-R-VLLM-NIXL-UNAVAILABLE": "RuntimeError: "}
LIST_VALUE = {"QD-R-CUDA-FLASHINFER-ARCH": "[10, 11]"}  # the field prints a Python list


@lru_cache(maxsize=None)
def mined(component: str) -> dict:
    return json.loads((SIGNATURES / f"{component}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("remedy_id,component,template", CLAIMS, ids=[f"{c[0]}:{c[1]}" for c in CLAIMS])
def test_the_template_an_entry_was_written_from_is_still_mined(remedy_id, component, template):
    assert template in {t["template"] for t in mined(component)["templates"]}, f"{component} no longer prints it"


@pytest.mark.parametrize("remedy_id,component,template", CLAIMS, ids=[f"{c[0]}:{c[1]}" for c in CLAIMS])
def test_the_entry_matches_its_template_rendered_with_sample_values(remedy_id, component, template):
    remedy = load_catalogue().get(remedy_id)
    text = RAISED_ONLY.get(remedy_id, "") + template
    renderings = [text.replace("{}", LIST_VALUE[remedy_id])] if remedy_id in LIST_VALUE else \
        mine_signatures.renderings(text)
    assert any(remedy.regex.search(r) for form in remedy.forms() for r in renderings if form.literal in r), remedy_id


def test_every_mined_component_records_where_each_release_was_read_from():
    for name in mine_components.COMPONENTS:
        data = mined(name)
        assert data["package"] == name and data["templates"], name
        assert set(data["source"]) == set(data["releases"]), name
        assert all(data["source"].values()), name


def test_nccl_warn_strings_become_templates_with_printf_fields():
    source = {"src/misc/socket.cc": 'WARN("socketStartConnect: Connect to %s failed : %s", addr, strerror(errno));\n'
                                    'WARN("Cuda failure %d \'%s\'", err, cudaGetErrorString(err));\n'
                                    'WARN("size %" PRIu64 " too large", n);\n',
              "src/init.cc": 'case ncclUnhandledCudaError     : return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";'}
    found = {(f.template, f.kind) for f in mine_components.c_templates(source)}
    assert ("socketStartConnect: Connect to {} failed : {}", "log:error") in found
    assert ("Cuda failure {} '{}'", "log:error") in found
    assert ("size {} too large", "log:error") in found
    assert ("unhandled cuda error (run with NCCL_DEBUG=INFO for details)", "error-string") in found


def test_go_errors_and_warnings_become_templates():
    source = {"cmd/x/main.go": 'return fmt.Errorf("failed to load library %q: %w", name, err)\n'
                               'logger.Warningf("Ignoring runtime hook in %v: not an executable", path)\n'}
    found = {(f.template, f.kind) for f in mine_components.go_templates(source)}
    assert ("failed to load library {}: {}", "raise:error") in found
    assert ("Ignoring runtime hook in {}: not an executable", "log:warning") in found


def test_release_names_drop_the_tag_decorations():
    nccl = mine_components.COMPONENTS["nccl"]
    assert mine_components.release_name(nccl, "v2.21.5-1") == "2.21.5"
    assert mine_components.release_name(nccl, "v1.17.8") == "1.17.8"
