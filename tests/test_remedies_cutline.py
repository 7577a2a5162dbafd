"""A line cut before its end (a terminal's column, a log viewer, an excerpt) still names its entry when what is
left is long enough to be that entry's message and no other's.

Wordings used here are the engines' own: SGLang's validate_input_length (python/sglang/srt/managers/utils.py:
"Input length ({} tokens) exceeds the maximum allowed length ({} tokens). ..."), Ray's OutOfDiskError
(python/ray/exceptions.py), CPython's asyncio create_server bind error as uvicorn logs it ("[Errno N] error while
attempting to bind on address %r: %s", Lib/asyncio/base_events.py), torch's c10d socket bind warning
(torch/csrc/distributed/c10d/socket.cpp) and c10's cudaGetDeviceCount error (c10/cuda/CUDAFunctions.cpp).
"""

from __future__ import annotations

from remedies import explain
from remedies.cutline import cut_entry

INPUT_CUT = "Input length (160062 tokens) exceeds the maximum allowed len"
BIND = "[Errno {errno}] error while attempting to bind on addre"


def test_a_message_cut_mid_word_names_its_entry():
    assert cut_entry(INPUT_CUT) == "QD-R-SGLANG-INPUT-EXCEEDS-POOL"
    assert cut_entry(f"the scheduler printed {INPUT_CUT}") == "QD-R-SGLANG-INPUT-EXCEEDS-POOL"


def test_a_cut_inside_a_figure_or_behind_a_closing_quote_names_its_entry():
    assert cut_entry("Input length (160062 tokens) exceeds the maximum allowed length (598") == \
        "QD-R-SGLANG-INPUT-EXCEEDS-POOL"
    assert cut_entry(f"`{INPUT_CUT}…`") == "QD-R-SGLANG-INPUT-EXCEEDS-POOL"


def test_entries_told_apart_only_after_the_cut_are_not_guessed():
    line = "Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before cal"
    assert cut_entry(line) is None  # error 803 (driver mismatch) and 804 (forward compat) come later


def test_a_figure_as_printed_tells_apart_wordings_that_differ_only_in_it():
    assert cut_entry(BIND.format(errno=98)) == "QD-R-VLLM-PORT-IN-USE"
    assert cut_entry(BIND.format(errno=99)) == "QD-R-HOST-BIND-ADDRESS-NOT-LOCAL"
    assert cut_entry(BIND.format(errno=13)) == "QD-R-HOST-BIND-PRIVILEGED-PORT"


def test_a_whole_line_that_goes_on_differently_is_another_message():
    benign = ("[c10d] The server socket has failed to bind to [::]:29500 (errno: 97 - Address family not supported "
              "by protocol).")
    assert cut_entry(benign) is None


def test_a_cut_shorter_than_a_message_can_be_told_by_names_nothing():
    assert cut_entry("Input length (160062 tokens) excee") is None


def test_a_pasted_log_ending_on_a_cut_record_is_explained_by_its_entry(tmp_path):
    paste = tmp_path / "tail.log"
    paste.write_text("[2025-03-03 06:49:27 TP5] Prefill batch. #new-seq: 1, #new-token: 8192\n"
                     f"[2025-03-03 06:49:28 TP5] {INPUT_CUT}\n")
    found = explain.explain_sources([paste])
    assert [f.remedy.id for f in found][:1] == ["QD-R-SGLANG-INPUT-EXCEEDS-POOL"]


def test_a_cut_info_record_stays_silent(tmp_path):
    paste = tmp_path / "info.log"
    paste.write_text(f"INFO 12-05 10:00:00 [api_server.py:1052] vLLM API server version 0.11.0\n"
                     f"INFO 12-05 10:00:01 [core.py:12] {INPUT_CUT}\n")
    assert explain.explain_sources([paste]) == []


def test_a_whole_sentence_that_ends_where_the_wording_goes_on_is_not_cut():
    # a healthy start's line (tests/data/corpus/healthy-vllm-miaai-47-free-memory-passed.log) ends its sentence
    # where the entry's wording goes on ("... on startup is less than desired GPU memory utilization ...")
    assert cut_entry("Free memory on device (110.37/121.69 GiB) on startup.") is None
