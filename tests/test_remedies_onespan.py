"""Several log lines pasted into one inline code span are read as lines again, so the error among them is read as
its own line (remedies/onespan.py); a message quoted in a sentence's code span stays one line. The message is
SGLang's own (sglang/srt/server_args.py: "--enable-prefix-mm-cache requires --encoder-only to be enabled")."""

from __future__ import annotations

from remedies import explain_sources
from remedies.onespan import split_spans

ERROR = "ValueError: --enable-prefix-mm-cache requires --encoder-only to be enabled"
SPAN = f"`[2026-12-05 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3.5-35B-A3B') {ERROR} Process exited`"


def test_a_span_of_records_is_split_at_each_record_head():
    split = split_spans([(1, f"sglang fails: {SPAN}")])
    assert split is not None
    assert [text for _, text in split] == ["sglang fails:", "[2026-12-05 10:00:00] server_args=ServerArgs("
                                           "model_path='Qwen/Qwen3.5-35B-A3B')", f"{ERROR} Process exited"]


def test_the_error_inside_the_span_is_the_root(tmp_path):
    paste = tmp_path / "chat.md"
    paste.write_text(f"sglang fails: {SPAN}\n")
    found = explain_sources([paste])
    assert found and found[0].crash is not None and found[0].crash.exception.startswith(ERROR)


def test_a_span_that_opens_with_prose_is_a_quoted_message():
    assert split_spans([(1, f"it says `the server raised {ERROR} twice` and stops")]) is None
