"""The real-parser bridge without a backend: discovery, fallback to the schema, one-line errors."""

from __future__ import annotations

import sys

import pytest

from doctor.errors import DoctorError
from doctor.flags import _probe, validate
from doctor.flags.bridge import BridgeError, find_backend_python, real_parse


def test_no_backend_python_means_schema_validation(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("QWEN_DOCTOR_SGLANG_PYTHON", str(tmp_path / "missing-python"))
    assert find_backend_python("sglang") is None
    assert real_parse("sglang", ["--tp-size", "2"]) is None
    report = validate(["--tp-size", "two"], "sglang", "0.5.23")
    assert report.method == "schema sglang 0.5.23" and report.issues[0].kind == "bad_type"
    with pytest.raises(DoctorError, match="not installed") as refused:
        validate(["--tp-size", "2"], "sglang", method="real")
    assert f"QWEN_DOCTOR_SGLANG_PYTHON={tmp_path / 'missing-python'} is not an interpreter here" in str(refused.value)


def test_a_python_without_the_backend_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    if _has("sglang"):
        pytest.skip("this interpreter has SGLang")
    monkeypatch.setenv("QWEN_DOCTOR_SGLANG_PYTHON", sys.executable)
    with pytest.raises(BridgeError, match="could not build the sglang parser"):
        real_parse("sglang", ["--tp-size", "2"])


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize("message, expected", [
    ("unrecognized arguments: --radix-size 3 --foo", [("unknown_flag", "--radix-size"), ("unknown_flag", "--foo")]),
    ("argument --dtype: invalid choice: 'fp8' (choose from 'auto', 'half')", [("invalid_choice", "--dtype")]),
    ("argument --tp-size/--tensor-parallel-size: invalid int value: 'two'", [("bad_type", "--tp-size")]),
    ("argument --max-num-seqs: expected one argument", [("missing_value", "--max-num-seqs")]),
])
def test_probe_classifies_argparse_messages(message: str, expected: list[tuple[str, str]]) -> None:
    assert [(k, f) for k, f, _ in _probe.classify(message)] == expected


def test_probe_drops_a_flag_and_its_value_to_find_the_next_error() -> None:
    assert _probe.drop(["--a", "1", "--b", "2"], "--a") == ["--b", "2"]
    assert _probe.drop(["--a=1", "--b"], "--a") == ["--b"]
    assert _probe.drop(["--b"], "--a") is None
