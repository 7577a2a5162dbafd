"""The SGLang command lines deploy would start, parsed by SGLang's real argument parser.

SGLang cannot serve on a machine without a GPU (its CPU path needs sgl-kernel CPU ops that are not on
PyPI), so deploy's SGLang path is verified in two halves: the launcher, log follower and exerciser against
the fake server (test_deploy_run.py), and here the exact argv against the real parser. Needs
QWEN_DOCTOR_SGLANG_PYTHON (a light `pip install --no-deps sglang` venv is enough); skips without it.
"""

from __future__ import annotations

import os

import pytest

from doctor.deploy import prepare
from doctor.flags.bridge import real_parse_many

pytestmark = pytest.mark.slow
SGLANG_PROFILES = ("sglang-stable", "sglang-fp8", "sglang-interactive")


def test_deploy_renders_sglang_commands_its_real_parser_accepts() -> None:
    python = os.environ.get("QWEN_DOCTOR_SGLANG_PYTHON")
    if not python:
        pytest.skip("set QWEN_DOCTOR_SGLANG_PYTHON to an interpreter with sglang installed")
    specs = [prepare.render(prepare.load(name), port=30123, host="127.0.0.1") for name in SGLANG_PROFILES]
    arg_lists = [prepare.backend_args(prepare.with_interpreter(s, python)) for s in specs]
    arg_lists.append(arg_lists[0] + ["--radix-size", "3"])
    reports = real_parse_many("sglang", arg_lists, python=python)
    for name, report in zip(SGLANG_PROFILES, reports):
        assert report.ok, (name, report.issues)
    assert [i.flag for i in reports[-1].issues if i.is_error] == ["--radix-size"]
