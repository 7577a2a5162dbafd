"""The real SGLang parser (a light, no-deps SGLang install named by QWEN_DOCTOR_SGLANG_PYTHON): the SGLang
profiles are accepted, mistakes are reported in its words, and the static schema matches it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from doctor.flags.bridge import find_backend_python, real_parse_many, real_schema
from doctor.flags.schema import load_schema
from profiles import list_profiles

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def sglang_python() -> str:
    python = find_backend_python("sglang")
    if python is None:
        pytest.skip("no python with SGLang (set QWEN_DOCTOR_SGLANG_PYTHON)")
    return python


def test_sglang_profiles_pass_the_real_parser_and_mistakes_fail(sglang_python: str) -> None:
    sglang_profiles = [p for p in list_profiles() if p.backend == "sglang"]
    arg_lists = [p.render().backend_args for p in sglang_profiles]
    arg_lists.append(["--model-path", "m", "--radix-size", "3", "--kv-cache-dtype", "uint8", "--tp-size", "two"])
    reports = real_parse_many("sglang", arg_lists, python=sglang_python)
    for profile, report in zip(sglang_profiles, reports):
        assert report.ok, (profile.name, report.issues)
    bad = {(i.kind, i.flag) for i in reports[-1].issues}
    assert bad == {("unknown_flag", "--radix-size"), ("invalid_choice", "--kv-cache-dtype"), ("bad_type", "--tp-size")}


def test_static_schema_matches_the_real_sglang_parser(sglang_python: str) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    from extract_flag_schema import compare

    real = real_schema("sglang", python=sglang_python)
    report = compare(load_schema("sglang", real["version"]), real)
    assert report["matched_options"] == report["real_options"] and not report["extra_in_static"]
    assert report["flags_with_identical_attributes"] >= 0.9 * report["real_flags"]
