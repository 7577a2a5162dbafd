"""An issue title that paraphrases a failure in the reporter's words names the entry whose own words (title,
literals, the exception classes its samples raise) it shares, and only one that stands out
(remedies/claimwords.py)."""

from __future__ import annotations

import pytest

from remedies.claimwords import claimed_entry, terms
from tests.pastes import explain_paste

ENV_BODY = "\n### Your current environment\n<details>\n<summary>env</summary>\n\n    PyTorch version: 2.9.0\n\n</details>\n"


@pytest.mark.parametrize("title, entry", [
    ("Chat template error with a system message in the middle of the conversation", "QD-R-HF-CHAT-TEMPLATE-REFUSED"),
    ("Docker container cannot find the GPU: nvidia-container-cli error", "QD-R-CUDA-CONTAINER-NO-GPU-RUNTIME"),
    ("Embeddings API fails with 400: model does not support embeddings", "QD-R-VLLM-POOLING-ON-CAUSAL-LM"),
    ("Ray cluster fails with a version mismatch between head and worker", "QD-R-RAY-VERSION-MISMATCH"),
])
def test_a_paraphrased_title_names_the_entry_whose_words_it_shares(title, entry):
    assert claimed_entry(title) == entry


def test_a_title_that_names_an_exception_class_names_only_an_entry_that_raises_it():
    assert claimed_entry("Chat template fails with KeyError for a system message") is None
    assert claimed_entry("Chat template fails with TemplateError for a system message") == "QD-R-HF-CHAT-TEMPLATE-REFUSED"


@pytest.mark.parametrize("title", [
    "Engine hangs after CUDA graph capture with expert parallel",
    "Server stuck when the chat template has a system message",
])
def test_a_stall_is_claimed_by_no_entry(title):
    assert claimed_entry(title) is None


@pytest.mark.parametrize("title", [
    "Port 8000 already in use",  # the API port or the torch store's: either
    "vLLM 0.11 fails on 2x H100",
    "How to deploy Qwen3 with vLLM on Kubernetes",
])
def test_a_title_that_could_be_several_failures_or_none_names_no_entry(title):
    assert claimed_entry(title) is None


def test_terms_keep_exception_classes_whole_and_drop_report_words():
    said = terms("[Bug]: vLLM fails with KeyError when loading FP8 experts on TP 2")
    assert {"keyerror", "loading", "fp8", "expert", "tp"} <= said
    assert not {"vllm", "fails", "with", "bug"} & said


def test_an_issue_whose_body_names_nothing_is_explained_by_its_titles_entry(tmp_path):
    found = explain_paste(tmp_path, "# [Bug]: Embeddings API fails with 400: model does not support embeddings\n"
                          + ENV_BODY)
    assert [f.remedy.id for f in found] == ["QD-R-VLLM-POOLING-ON-CAUSAL-LM"]


CLIENT_CRASH = ("```\nTraceback (most recent call last):\n  File \"/app/client.py\", line 20, in <module>\n"
                "    resp = client.chat.completions.create(model=\"m\", messages=msgs)\n"
                "RuntimeError: request failed after 3 retries\n```\n")


def test_a_crash_nothing_places_is_named_by_the_reports_title(tmp_path):
    found = explain_paste(tmp_path, "# [Bug]: Chat template error with a system message in the middle of the "
                                    "conversation\n\n### Describe the bug\n" + CLIENT_CRASH)
    assert found[0].remedy.id == "QD-R-HF-CHAT-TEMPLATE-REFUSED"


def test_a_title_that_names_no_entry_leaves_the_crash_unrecognised(tmp_path):
    found = explain_paste(tmp_path, "# [Bug]: vLLM 0.11 fails on 2x H100\n\n### Describe the bug\n" + CLIENT_CRASH)
    assert [f.remedy.id for f in found] == ["QD-R-UNKNOWN"]
