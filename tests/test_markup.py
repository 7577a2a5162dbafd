"""Markdown inline markup is shown plainly in the terminal."""

from doctor.markup import plain


def test_code_bold_emphasis_headings_and_links_become_plain_text():
    assert plain("Set `--max-model-len 4096` **now**") == "Set --max-model-len 4096 now"
    assert plain("see [the recipe](https://docs.vllm.ai/x)") == "see the recipe (https://docs.vllm.ai/x)"
    assert plain("<https://a.b>") == "<https://a.b>"
    assert plain("## Fix\nuse *this*") == "Fix\nuse this"


def test_arithmetic_and_globs_are_left_alone():
    assert plain("2 * 3 * 4 GiB and *.yaml files") == "2 * 3 * 4 GiB and *.yaml files"
    assert plain("snake_case_name and __init__") == "snake_case_name and __init__"
