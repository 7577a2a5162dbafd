"""A traceback fragment that stops on an engine `assert` statement is that assert's AssertionError."""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain

PREFIX = "(Worker pid=2345) (Worker_TP0 pid=2345) ERROR 11-20 10:00:00 [multiproc_executor.py:700] "
FRAMES = [
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 1200, in _prepare_inputs',
    "    attn_metadata_i = builder.build(",
    '  File "{path}", line 210, in build',
    "    assert not (num_accepted_tokens is not None and num_decodes == 0)",
]
ENGINE_PATH = "/usr/local/lib/python3.12/dist-packages/vllm/v1/attention/backends/gdn_attn.py"


def first(tmp_path: Path, lines: list[str], prefix: str = PREFIX) -> explain.Finding | None:
    log = tmp_path / "paste.log"
    log.write_text("".join(prefix + line + "\n" for line in lines), encoding="utf-8")
    found = explain.explain_sources([log])
    return found[0] if found else None


@pytest.mark.parametrize("prefix", [PREFIX, "", "vllm-1  | "])
@pytest.mark.parametrize("tail", [[], ["    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"], ["", "```"]])
def test_the_assert_a_fragment_stops_on_is_the_engines_bug_raised_there(tmp_path, prefix, tail):
    lines = [line.format(path=ENGINE_PATH) for line in FRAMES] + tail
    finding = first(tmp_path, lines, prefix)
    assert finding is not None and finding.engine_bug is not None
    assert finding.crash is not None and finding.crash.frame is not None
    assert (finding.crash.frame.path, finding.crash.frame.line) == (ENGINE_PATH, 210)
    assert finding.crash.exception.startswith("AssertionError: assert not (num_accepted_tokens")


def test_an_assert_in_the_users_own_code_is_not_read_as_the_engines(tmp_path):
    lines = [line.format(path="/srv/app/train.py") for line in FRAMES]
    finding = first(tmp_path, lines)
    assert finding is None or finding.crash is None or "train.py" not in str(finding.crash.frame)


def test_a_traceback_that_goes_on_past_the_assert_is_left_to_the_crash_scan(tmp_path):
    lines = [line.format(path=ENGINE_PATH) for line in FRAMES] + ["AssertionError: num_decodes must be positive"]
    finding = first(tmp_path, lines)
    assert finding is not None and finding.crash is not None
    assert finding.crash.exception == "AssertionError: num_decodes must be positive"
