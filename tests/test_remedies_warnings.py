"""Warnings are not failures: every mined `log:warning` template, printed at WARNING level, is a healthy log.

remedies/signatures/*.json hold the warnings each covered release of each component can print (mined from
source). Rendered with sample values and logged at WARNING, they form a log of a server that carried on: it
must raise no error finding and no unrecognised crash. An error entry that matches a WARNING record is
context (`remedies.levels`) unless the log then fails, where it may be the cause.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remedies import explain_sources
from remedies.levels import as_context, logged_as_warning
from remedies import load_catalogue

SIGNATURES = Path(__file__).resolve().parents[1] / "remedies" / "signatures"
PACKAGES = sorted(p.stem for p in SIGNATURES.glob("*.json"))


def warning_log(package: str, path: Path, value: str) -> Path:
    """Every log:warning template of the package, as vLLM's logger prints a WARNING record."""
    data = json.loads((SIGNATURES / f"{package}.json").read_text(encoding="utf-8"))
    lines = [f"WARNING 12-04 10:00:00 [{t['modules'][0].rsplit('/', 1)[-1]}:1] {t['template'].replace('{}', value)}"
             for t in data["templates"] if t["kind"] == "log:warning"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_mined_warnings_cover_the_engines_and_the_components_below_them():
    counts = {p: sum(t["kind"] == "log:warning" for t in json.loads((SIGNATURES / f"{p}.json").read_text())["templates"])
              for p in PACKAGES}
    assert counts["vllm"] > 300 and counts["sglang"] > 300
    assert all(counts[p] > 0 for p in ("ray", "torch", "transformers", "huggingface_hub", "vllm_kv_transfer",
                                       "sglang_disaggregation", "nvidia_container_toolkit"))


@pytest.mark.parametrize("value", ["1234", "0.9", "GPU"])
@pytest.mark.parametrize("package", PACKAGES)
def test_a_log_of_only_warnings_raises_no_error(package, value, tmp_path):
    findings = explain_sources([warning_log(package, tmp_path / f"{package}.log", value)])
    assert [(f.remedy.id, f.line) for f in findings if f.remedy.severity == "error"] == []


def test_an_optional_component_missing_at_start_up_is_no_finding(tmp_path):
    log = tmp_path / "nixl-warning.log"
    log.write_text("WARNING 07-08 02:13:40 [nixl_connector.py:60] NIXL is not available\n"
                   "INFO 07-08 02:13:52 [api_server.py:1455] Starting vLLM API server 0 on http://0.0.0.0:8000\n",
                   encoding="utf-8")
    assert explain_sources([log]) == []


def test_the_same_words_raised_when_the_component_is_needed_are_the_cause(tmp_path):
    log = tmp_path / "nixl-raise.log"
    log.write_text("ERROR 07-08 02:13:53 [nixl_connector.py:411] NIXL is not available\n"
                   "Traceback (most recent call last):\n"
                   '  File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/kv_transfer/kv_connector/v1/'
                   'nixl_connector.py", line 412, in __init__\n'
                   '    raise RuntimeError("NIXL is not available")\n'
                   "RuntimeError: NIXL is not available\n", encoding="utf-8")
    assert explain_sources([log])[0].remedy.id == "QD-R-VLLM-NIXL-UNAVAILABLE"


def test_an_error_entry_on_a_warning_record_is_context_when_the_server_carries_on(tmp_path):
    log = tmp_path / "nan-warning.log"
    log.write_text("[2026-12-04 10:00:00] WARNING sampler.py:1: Detected errors during sampling! NaN in the logits.\n"
                   "[2026-12-04 10:00:01] INFO:     127.0.0.1:5000 - \"POST /generate HTTP/1.1\" 200 OK\n",
                   encoding="utf-8")
    (finding,) = explain_sources([log])
    assert finding.remedy.id == "QD-R-SGLANG-NAN-LOGITS" and finding.remedy.severity == "warning"


def test_a_warning_before_a_crash_is_a_candidate_cause_again(tmp_path):
    log = tmp_path / "c-ext.log"
    log.write_text("WARNING 09-02 10:43:41 _custom_ops.py:18] Failed to import from vllm._C with "
                   "ModuleNotFoundError(\"No module named 'vllm._C'\")\n"
                   "INFO 09-02 10:43:43 [__init__.py:239] Automatically detected platform cuda.\n"
                   "Traceback (most recent call last):\n"
                   '  File "/opt/vllm/vllm/_custom_ops.py", line 40, in gelu_quick\n'
                   "    torch.ops._C.gelu_quick(out, x)\n"
                   "AttributeError: '_OpNamespace' '_C' object has no attribute 'gelu_quick'\n", encoding="utf-8")
    first = explain_sources([log])[0]
    assert first.remedy.id == "QD-R-VLLM-C-EXT-MISSING" and first.remedy.severity == "error"


def test_the_level_rule_reads_the_record_level_only():
    nan = load_catalogue().get("QD-R-SGLANG-NAN-LOGITS")
    assert logged_as_warning("(EngineCore pid=1) WARNING 12-04 10:00:00 [x.py:1] message")
    assert not logged_as_warning("ValueError: Detected errors during sampling! NaN in the logits.")
    assert as_context(nan, "ValueError: Detected errors during sampling! NaN in the logits.") is nan
