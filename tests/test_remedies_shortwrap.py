"""A message a web page wrapped at a space after its first words (a short line, the rest on the next line) is read
as one message when together the two lines are a mined template and neither is one on its own."""

from __future__ import annotations

from pathlib import Path

from remedies import explain_sources
from remedies.shortwrap import join_short_wraps

QUANT = ("method awq is not supported for the current GPU. Minimum capability: 75. Current capability: 70.")


def numbered(*lines: str) -> list[tuple[int, str]]:
    return list(enumerate(lines, 1))


def test_a_short_head_and_its_rest_are_joined_into_the_template():
    joined = join_short_wraps(numbered("Loading fails with", "ValueError: The quantization", QUANT))
    assert joined == [(1, "Loading fails with"), (2, f"ValueError: The quantization {QUANT}")]


def test_the_joined_message_names_its_entry(tmp_path: Path):
    log = tmp_path / "page.log"
    log.write_text(f"ValueError: The quantization\n{QUANT}\n", encoding="utf-8")
    assert explain_sources([log])[0].remedy.id == "QD-R-VLLM-QUANT-CAPABILITY"


def test_short_lines_that_make_no_template_together_stay_apart():
    lines = numbered("Steps to reproduce:", "run the server with two GPUs and send one request")
    assert join_short_wraps(lines) is None


def test_a_short_line_before_a_new_record_is_not_joined():
    lines = numbered("ValueError: The quantization", f"INFO 01-10 08:00:01 [core.py:12] {QUANT}")
    assert join_short_wraps(lines) is None


def test_a_traceback_frame_is_never_the_head_of_a_wrap():
    lines = numbered('  File "x.py", line 1', QUANT)
    assert join_short_wraps(lines) is None
