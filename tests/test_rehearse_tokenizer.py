"""The generated rehearsal tokenizer: Qwen3.5's layout (special ids, vocabulary size), lossless byte-level
round trips, the same tokenizer whether built by the `tokenizers` library or written as JSON, and the chat
template's thinking switch."""

from __future__ import annotations

import json

import jinja2
import pytest

from doctor.rehearse import tokenizer as tok
from doctor.rehearse.checkpoint import chat_template, tokenizer_config
from doctor.rehearse.vocab import VOCAB_SIZE, special_ids

tokenizers = pytest.importorskip("tokenizers")

TEXTS = ["Say hello in five words.", "  leading spaces\n\ttabs and\r\nnewlines  ", "wörld 漢字 🙂 ☃",
         '{"answer": true, "colour": "red"}', "", "\x00\x01 control bytes \x7f", "a" * 300]


@pytest.fixture(scope="module")
def built() -> "tokenizers.Tokenizer":
    return tokenizers.Tokenizer.from_str(tok.tokenizer_json_library())


@pytest.fixture(scope="module")
def direct() -> "tokenizers.Tokenizer":
    return tokenizers.Tokenizer.from_str(tok.tokenizer_json_direct())


def test_vocabulary_is_padded_to_the_model_size(built, direct) -> None:
    assert built.get_vocab_size() == direct.get_vocab_size() == VOCAB_SIZE == 248_320
    assert built.id_to_token(VOCAB_SIZE - 1) == "<|extra_249|>"


@pytest.mark.parametrize("token, expected", [
    ("<|endoftext|>", 248044), ("<|im_start|>", 248045), ("<|im_end|>", 248046), ("<|vision_start|>", 248053),
    ("<|vision_end|>", 248054), ("<|image_pad|>", 248056), ("<|video_pad|>", 248057), ("<tool_call>", 248058),
    ("</tool_call>", 248059), ("<tool_response>", 248066), ("<think>", 248068), ("</think>", 248069)])
def test_special_tokens_sit_at_qwen35_ids(built, direct, token: str, expected: int) -> None:
    assert special_ids()[token] == expected
    assert built.token_to_id(token) == direct.token_to_id(token) == expected
    assert built.encode(f"x{token}y").ids.count(expected) == 1


@pytest.mark.parametrize("text", TEXTS)
def test_every_text_round_trips_and_both_builds_agree(built, direct, text: str) -> None:
    ids = built.encode(text).ids
    assert ids == direct.encode(text).ids
    assert built.decode(ids) == text
    assert all(i < VOCAB_SIZE for i in ids)


def test_merges_compress_ordinary_text(built) -> None:
    text = "hello there, this is ordinary text"
    assert len(built.encode(text).ids) < len(text.encode()) / 2


def test_every_id_decodes_to_text_so_random_weights_can_stream(built) -> None:
    ids = list(range(0, VOCAB_SIZE, 997)) + list(range(248_040, VOCAB_SIZE))
    for i in ids:
        assert isinstance(built.decode([i], skip_special_tokens=False), str)
    assert built.decode([248_100, 248_319]) == "<|extra_30|><|extra_249|>"


def test_chat_template_renders_thinking_on_by_default_and_off_on_request() -> None:
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    template = env.from_string(chat_template())
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    on = template.render(messages=messages, add_generation_prompt=True)
    off = template.render(messages=messages, add_generation_prompt=True, enable_thinking=False)
    assert on == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n"
    assert off.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_chat_template_renders_images_tool_calls_and_reasoning() -> None:
    template = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(chat_template())
    text = template.render(messages=[
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "what is it?"}]},
        {"role": "assistant", "reasoning_content": "look", "content": "",
         "tool_calls": [{"function": {"name": "zoom", "arguments": {"x": 1}}}]},
        {"role": "tool", "content": "done"}], add_generation_prompt=False,
        tools=[{"type": "function", "function": {"name": "zoom"}}])
    assert "<|vision_start|><|image_pad|><|vision_end|>what is it?" in text
    assert '<think>\nlook\n</think>\n\n\n<tool_call>\n{"name": "zoom", "arguments": {"x": 1}}\n</tool_call>' in text
    assert "<tool_response>\ndone\n</tool_response>" in text
    assert "<tools>" in text


def test_tokenizer_config_names_qwen_eos_pad_and_every_added_token() -> None:
    cfg = tokenizer_config("T")
    assert (cfg["eos_token"], cfg["pad_token"], cfg["bos_token"]) == ("<|im_end|>", "<|endoftext|>", None)
    assert cfg["added_tokens_decoder"]["248068"]["content"] == "<think>"
    assert cfg["added_tokens_decoder"]["248046"]["special"] is True
    assert cfg["added_tokens_decoder"]["248058"]["special"] is False
    assert len(cfg["added_tokens_decoder"]) == VOCAB_SIZE - 248044
    assert json.loads(json.dumps(cfg))["chat_template"] == "T"


def test_tokenizer_json_falls_back_to_direct_json_without_the_library(monkeypatch) -> None:
    def missing(vocab_size: int = VOCAB_SIZE) -> str:
        raise ImportError("no tokenizers")

    monkeypatch.setattr(tok, "tokenizer_json_library", missing)
    text, how = tok.tokenizer_json()
    assert how == "json"
    assert json.loads(text)["model"]["type"] == "BPE"


def test_a_vocabulary_too_small_for_the_special_ids_is_refused() -> None:
    with pytest.raises(ValueError, match="no room"):
        tok.added_tokens(248_050)
