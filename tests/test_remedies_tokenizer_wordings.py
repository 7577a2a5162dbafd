"""Every transformers wording of a tokenizer that needs sentencepiece names the sentencepiece entry, in the shapes a
paste carries it (bare, in a traceback, inside a JSON-lines application log's escaped `event` string).

transformers src/transformers/tokenization_utils_fast.py PreTrainedTokenizerFast.__init__ raises "Cannot
instantiate this tokenizer from a slow version. ..." (from_slow without a slow class) and "Couldn't instantiate the
backend tokenizer from one of: ... You need to have sentencepiece [or tiktoken] installed ..."; utils/import_utils.py
SENTENCEPIECE_IMPORT_ERROR "{0} requires the SentencePiece library but it was not found in your environment".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remedies import explain

WORDINGS = [
    "ValueError: Cannot instantiate this tokenizer from a slow version. If it's based on sentencepiece, make sure you "
    "have sentencepiece installed.",
    "ValueError: Couldn't instantiate the backend tokenizer from one of: \n(1) a `tokenizers` library serialization "
    "file, \n(2) a slow tokenizer instance to convert or \n(3) an equivalent slow tokenizer class to instantiate and "
    "convert. \nYou need to have sentencepiece or tiktoken installed to convert a slow tokenizer to a fast one.",
    "ImportError: \nLlamaTokenizer requires the SentencePiece library but it was not found in your environment.",
]


def shapes(message: str) -> dict[str, str]:
    traceback = ('Traceback (most recent call last):\n  File "/app/serve.py", line 12, in <module>\n'
                 "    tokenizer = AutoTokenizer.from_pretrained(path)\n" + message)
    return {
        "bare": message + "\n",
        "traceback": traceback + "\n",
        "json_lines": json.dumps({"time": "2026-01-01T00:00:00Z", "level": "ERROR", "event": traceback}) + "\n",
    }


CASES = [(i, shape) for i, wording in enumerate(WORDINGS) for shape in shapes(wording)]


@pytest.mark.parametrize(("index", "shape"), CASES)
def test_each_sentencepiece_wording_names_the_entry(tmp_path: Path, index: int, shape: str):
    log = tmp_path / "paste.log"
    log.write_text(shapes(WORDINGS[index])[shape], encoding="utf-8")
    assert [f.remedy.id for f in explain.explain_sources([log])][:1] == ["QD-R-HF-SENTENCEPIECE-MISSING"]


# vLLM's get_hf_config / processor type check (vllm/multimodal/processing/context.py, older
# vllm/inputs/registry.py; vllm/transformers_utils/processor.py) in the shapes a report prints it: one line, wrapped
# after "but", and as two Markdown lines with bold labels and backticked classes.
VLLM_CLASS = "<class 'vllm.transformers_utils.configs.qwen3_5_moe.Qwen3_5MoeConfig'>"
HF_CLASS = "<class 'transformers.models.qwen3_5_moe.configuration_qwen3_5_moe.Qwen3_5MoeConfig'>"
TYPE_SHAPES = [
    f"TypeError: Invalid type of HuggingFace config. Expected type: {VLLM_CLASS}, but found type: {HF_CLASS}\n",
    f"TypeError: Invalid type of HuggingFace config. Expected type: {VLLM_CLASS}, but\nfound type: {HF_CLASS}\n",
    f"**Expected type:** `{VLLM_CLASS}`\n**But found type:** `{HF_CLASS}`\n",
    f"- Expected type: `{VLLM_CLASS}`\n- but found type: `{HF_CLASS}`\n",
]


@pytest.mark.parametrize("text", TYPE_SHAPES)
def test_a_config_class_from_a_newer_transformers_is_a_dependency_mismatch(tmp_path: Path, text: str):
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    assert [f.remedy.id for f in explain.explain_sources([log])][:1] == ["QD-R-VLLM-DEPENDENCY-VERSION"]
