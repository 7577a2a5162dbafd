"""Speculative-decoding methods by what they load: --speculative-config "method" (vLLM) and
--speculative-algorithm (SGLang), lower-cased."""

MTP_METHODS = ("mtp", "qwen3_5_mtp", "qwen3_next_mtp", "nextn", "deepseek_mtp", "")   # the checkpoint's own MTP layer
MODEL_METHODS = ("eagle", "eagle3", "dflash", "draft_model", "standalone")           # a separate drafter checkpoint
NO_MODEL_METHODS = ("ngram", "ngram_gpu", "suffix")                                   # no model at all
