"""A message quoted in part (its leading clause cut, an ellipsis) still names its entry; a short fragment does not.

The wording is vLLM's own (vllm/config/compilation.py, >= 0.20.2): "max_num_seqs ({}) exceeds available Mamba
cache blocks ({}). Each decode sequence requires one Mamba cache block, so CUDA graph capture cannot proceed."
"""

from __future__ import annotations

from pathlib import Path

from remedies import explain
from remedies.partial import MIN_RUN, figured, partial_entry, shared_run

CUT = ("the engine says `… exceeds available Mamba cache blocks (196). Each decode sequence requires one Mamba "
       "cache block, so CUDA graph capture cannot proceed…` and exits")


def test_figures_compare_as_figures_and_an_ellipsis_breaks_a_run():
    assert figured("blocks (196). Each {} seq 2.5") == "blocks (#). Each # seq #"
    assert shared_run(figured("x … abc (7) def"), figured("w abc ({}) def"), "abc") == len(" abc (#) def")
    assert "\x00" in figured("cut…here")


def test_a_quote_without_its_leading_clause_names_the_entry():
    found = partial_entry(CUT)
    assert found is not None and found.id == "QD-R-VLLM-MAMBA-BLOCKS"


def test_a_short_fragment_or_the_literal_inside_a_sentence_does_not_count():
    assert partial_entry("a message about how max seqs exceeds available Mamba cache blocks (the cache) here") is None
    assert partial_entry("the log says `… Mamba cache blocks (196)` again") is None  # the literal is cut
    assert partial_entry("the log says `…exceeds available Mamba cache blocks` and stops") is None  # nothing past it
    assert len("Mamba cache blocks (#)") < MIN_RUN


def test_a_quote_of_the_middle_of_the_message_names_the_entry():
    found = partial_entry("the pod log ends with `...exceeds available Mamba cache blocks (682)...`")
    assert found is not None and found.id == "QD-R-VLLM-MAMBA-BLOCKS"


def test_a_prose_paraphrase_is_explained_with_the_entrys_generic_fix(tmp_path):
    log = tmp_path / "pr.md"
    log.write_text(f"## Qwen3.6 at 128k crashloops\n\nWith `--max-model-len 131072` the pod restarts; {CUT}.\n")
    (finding,) = explain.explain_sources([log])
    assert finding.remedy.id == "QD-R-VLLM-MAMBA-BLOCKS"
    assert "{" not in " ".join(step.text for step in finding.steps)


def test_a_whole_message_that_differs_before_the_shared_run_is_another_message():
    assert partial_entry("OSError: libavutil.so.60: cannot open shared object file: No such file or directory") is None


def test_a_whole_exception_line_is_left_to_the_crash_scan():
    line = ("ImportError: cannot import name 'snapshot_download_x' from 'huggingface_hub' "
            "(/usr/local/lib/python3.12/dist-packages/huggingface_hub/__init__.py)")
    assert partial_entry(line) is None
