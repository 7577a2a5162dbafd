"""Flag schemas and the schema validator: coverage, version picking, argparse-like judgement."""

from __future__ import annotations

import pytest

from doctor.flags import available_versions, load_schema, validate_args, validate_command
from doctor.flags.schema import pick_version
from profiles import list_profiles


def kinds(args: list[str], backend: str = "vllm", version: str = "0.32.0") -> list[tuple[str, str]]:
    return [(i.kind, i.flag) for i in validate_command(args, backend, version).issues]


def test_schemas_cover_the_required_version_ranges() -> None:
    vllm = {str(v) for v in available_versions("vllm")}
    sglang = {str(v) for v in available_versions("sglang")}
    assert {"0.17.0", "0.19.1", "0.23.0", "0.26.0", "0.30.0", "0.32.0", "0.34.0"} <= vllm
    assert {"0.5.9", "0.5.12", "0.5.16", "0.5.20", "0.5.23"} <= sglang


def test_validator_picks_the_nearest_covered_version_at_or_below() -> None:
    assert str(pick_version("vllm", "0.32.5")) == "0.32.0"
    assert str(pick_version("sglang", "0.5.12.post1")) == "0.5.12.post1"
    assert str(pick_version("vllm", "0.10.0")) == "0.17.0"
    assert str(pick_version("vllm", None)) == str(available_versions("vllm")[-1])
    # a vLLM built without its release tags (setuptools_scm's 0.1.devN) is checked against the newest schema
    assert str(pick_version("vllm", "0.1.dev19754+g3a0914114")) == str(available_versions("vllm")[-1])


def test_every_profile_passes_every_covered_version_in_its_range() -> None:
    checked = 0
    for profile in list_profiles():
        args = profile.render({"model_dir": "/m"} if "model_dir" in profile.variables else {}).backend_args
        for version in available_versions(profile.backend):
            if version in profile.backend_version:
                report = validate_command(args, profile.backend, str(version))
                assert report.ok, (profile.name, str(version), report.issues)
                checked += 1
    assert checked > 150


def test_unknown_flag_gets_did_you_mean() -> None:
    issue = validate_command(["--tensor-paralel-size", "2"], "vllm", "0.32.0").issues[0]
    assert issue.kind == "unknown_flag" and issue.suggestion == "--tensor-parallel-size"


def test_bad_choice_and_bad_type_like_argparse() -> None:
    assert kinds(["--dtype", "fp8"]) == [("invalid_choice", "--dtype")]
    assert kinds(["--tensor-parallel-size", "two"]) == [("bad_type", "--tensor-parallel-size")]
    assert kinds(["--max-model-len", "32k"]) == []
    assert kinds(["--gpu-memory-utilization", "high"]) == [("bad_type", "--gpu-memory-utilization")]


def test_vllm_spellings_the_real_parser_accepts() -> None:
    assert kinds(["-tp", "2", "--max_model_len=4096", "--no-enable-prefix-caching", "-O3",
                  "--compilation-config.cudagraph_mode", "FULL"]) == []


def test_missing_value_is_reported() -> None:
    assert kinds(["--max-num-seqs"]) == [("missing_value", "--max-num-seqs")]


def test_sglang_mamba_flag_rename_is_tracked_across_versions() -> None:
    old = ["--mamba-scheduler-strategy", "extra_buffer"]
    assert kinds(old, "sglang", "0.5.9") == []
    assert kinds(old, "sglang", "0.5.16") == [("deprecated", "--mamba-scheduler-strategy")]
    assert kinds(old, "sglang", "0.5.20")[0][0] == "unknown_flag"
    assert kinds(["--mamba-radix-cache-strategy", "extra_buffer"], "sglang", "0.5.23") == []


def test_sglang_does_not_turn_underscores_into_dashes() -> None:
    assert kinds(["--tp_size", "2"], "sglang", "0.5.23")[0][0] == "unknown_flag"


def test_removed_vllm_flag_is_unknown_in_newer_versions() -> None:
    assert "--calculate-kv-scales" in load_schema("vllm", "0.17.0").option_strings()
    assert kinds(["--calculate-kv-scales"], "vllm", "0.34.0")[0][0] == "unknown_flag"


def test_validate_args_on_a_schema_object_is_pure() -> None:
    schema = load_schema("sglang", "0.5.23")
    assert validate_args(["--tp-size", "2", "--context-length", "8192"], schema) == []


def test_max_model_len_is_checked_as_vllm_reads_it() -> None:
    schema = load_schema("vllm", "0.32.0")
    for good in ("32768", "32k", "25.6k", "32K", "auto", "-1"):
        assert not validate_args(["--max-model-len", good], schema), good
    for bad in ("1.5", "1.5K", "lots"):
        assert [i.kind for i in validate_args(["--max-model-len", bad], schema)] == ["bad_type"], bad
