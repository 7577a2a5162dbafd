"""A log pasted as grep printed it (`grep -rn ... logs/`) is read without grep's `file:N:` prefix, so a traceback
keeps its frames and its raise site (remedies/grepprefix.py, GNU grep's "Output Line Prefix Control"). The message
is a catalogue sample (vLLM's bf16 check, vllm/platforms/cuda.py); nothing here is copied from a held-out log."""

from __future__ import annotations

from pathlib import Path

from remedies import explain_sources
from remedies.grepprefix import peel_grep
from tests.test_remedies_layers import BF16, assert_named, bf16_traceback


def numbered(lines: list[str]) -> list[tuple[int, str]]:
    return list(enumerate(lines, 1))


def test_grep_n_output_is_read_with_its_traceback_frames(tmp_path: Path):
    lines = [f"logs/serve-0.log:{1040 + i}:{line}" for i, line in enumerate(bf16_traceback())]
    path = tmp_path / "grep.txt"
    path.write_text("\n".join(lines) + "\n")
    assert_named(explain_sources([path]), BF16)


def test_context_lines_lose_their_dash_prefix_too():
    peeled = peel_grep(numbered(["run.log-11-  File \"x.py\", line 3, in f", "run.log:12:ValueError: bad",
                                 "run.log:13:  raise", "other line"]))
    assert peeled is not None
    assert [text for _, text in peeled] == ['  File "x.py", line 3, in f', "ValueError: bad", "  raise", "other line"]


def test_a_source_files_own_site_and_a_word_with_a_colon_are_not_grep_prefixes():
    warnings = ["/usr/lib/python3/dist-packages/torch/cuda/__init__.py:61: FutureWarning: pynvml is deprecated",
                "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:61: FutureWarning: again"]
    assert peel_grep(numbered(warnings)) is None
    assert peel_grep(numbered(["ERROR: one", "ERROR: two", "note: three"])) is None


def test_one_prefixed_line_is_not_enough():
    assert peel_grep(numbered(["serve.log:ValueError: bad", "plain"])) is None
