"""Qwen3.5's tokenizer layout: vocabulary size and the ids of its special tokens.

Source: the added_tokens_decoder of the Qwen3.5 tokenizer as quoted in public code (e.g. a transformers
chat-template conformance table listing ids 248044..248069) and the Qwen3.5 config defaults of transformers
(models/qwen3_5_moe/configuration_qwen3_5_moe.py: image_token_id 248056, video_token_id 248057,
vision_start_token_id 248053, vision_end_token_id 248054); eos <|im_end|> 248046 and generation_config eos
[248046, 248044] (reference/qwen35-facts.md, C36).
"""

from __future__ import annotations

VOCAB_SIZE = 248_320
FIRST_SPECIAL_ID = 248_044

# (content, special): ids are FIRST_SPECIAL_ID + position, in this order.
SPECIAL_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
    ("<|object_ref_start|>", True), ("<|object_ref_end|>", True), ("<|box_start|>", True), ("<|box_end|>", True),
    ("<|quad_start|>", True), ("<|quad_end|>", True), ("<|vision_start|>", True), ("<|vision_end|>", True),
    ("<|vision_pad|>", True), ("<|image_pad|>", True), ("<|video_pad|>", True),
    ("<tool_call>", False), ("</tool_call>", False), ("<|fim_prefix|>", False), ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False), ("<|fim_pad|>", False), ("<|repo_name|>", False), ("<|file_sep|>", False),
    ("<tool_response>", False), ("</tool_response>", False), ("<think>", False), ("</think>", False),
)


def special_ids() -> dict[str, int]:
    """{token: id} for every special token."""
    return {content: FIRST_SPECIAL_ID + i for i, (content, _) in enumerate(SPECIAL_TOKENS)}


ENDOFTEXT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
EOS_ID = special_ids()[IM_END]
PAD_ID = special_ids()[ENDOFTEXT]
# The ids config.json names for the vision tower (transformers' Qwen3.5 defaults, written explicitly).
VISION_IDS = {"image_token_id": special_ids()["<|image_pad|>"], "video_token_id": special_ids()["<|video_pad|>"],
              "vision_start_token_id": special_ids()["<|vision_start|>"],
              "vision_end_token_id": special_ids()["<|vision_end|>"]}
