"""A user-looking error raised on an engine path that should not have run is named the engine's bug first.

transformers' GGUF architecture refusal reached through vLLM's speculator probe
(vllm/transformers_utils/config.py maybe_override_with_speculators, called from EngineArgs.create_engine_config
before the model config is built, without --hf-config-path) is vLLM's; reached from the model config's own
loading it stays the GGUF entry, whose advice applies.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain

GGUF = "QD-R-HF-GGUF-ARCH-UNSUPPORTED"
PROBE = ('  File "{root}/vllm/engine/arg_utils.py", line 1318, in create_engine_config\n'
         "    (self.model, self.tokenizer, self.speculative_config) = maybe_override_with_speculators(\n"
         '  File "{root}/vllm/transformers_utils/config.py", line 530, in maybe_override_with_speculators\n'
         "    config_dict, _ = PretrainedConfig.get_config_dict(\n")
MODEL_CONFIG = ('  File "{root}/vllm/config/model.py", line 610, in __post_init__\n'
                "    hf_config = get_config(self.hf_config_path or self.model,\n")
LOADER = ('  File "{root}/transformers/modeling_gguf_pytorch_utils.py", line 401, in load_gguf_checkpoint\n'
          '    raise ValueError(f"GGUF model with architecture {{architecture}} is not supported yet.")\n'
          "ValueError: GGUF model with architecture {arch} is not supported yet.\n")


def findings(tmp_path: Path, text: str) -> list[explain.Finding]:
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    return explain.explain_sources([log])


def log(path: str, arch: str, command: str) -> str:
    root = "/usr/local/lib/python3.12/dist-packages"
    return f"$ {command}\nTraceback (most recent call last):\n" + path.format(root=root) + LOADER.format(root=root, arch=arch)


@pytest.mark.parametrize("arch", ["qwen35moe", "qwen3next", "glm4moe"])
@pytest.mark.parametrize("flag", ["--hf-config-path Qwen/Qwen3.5-35B-A3B", ""])
def test_the_speculator_probe_reaching_the_gguf_loader_is_vllms_bug(tmp_path, arch, flag):
    first = findings(tmp_path, log(PROBE, arch, f"vllm serve /models/m.gguf {flag}"))[0]
    assert first.remedy.id == GGUF
    assert first.engine_bug is not None and "maybe_override_with_speculators" in first.engine_bug.raised_at
    assert ("already passes --hf-config-path" in first.engine_bug.why) is bool(flag)
    assert any(step.text.startswith("Serve the Hugging Face safetensors checkpoint") for step in first.fix[2:])


def test_the_model_configs_own_gguf_read_stays_the_gguf_entry(tmp_path):
    first = findings(tmp_path, log(MODEL_CONFIG, "qwen35moe", "vllm serve /models/m.gguf"))[0]
    assert first.remedy.id == GGUF and first.engine_bug is None


# Several tool calls' arguments in one assistant message: vLLM's chat preprocessing (_postprocess_messages,
# vllm/entrypoints/chat_utils.py) json.loads them and Python's decoder stops at the second document ("Extra data").
TOOL_PROSE = [
    "With two tool calls in one assistant message, vLLM 0.11 (`--tool-call-parser hermes`) returns 400: "
    "`json.decoder.JSONDecodeError: Extra data: line 1 column 38 (char 37)` from `_postprocess_messages`.",
    "**vLLM** answers 400 when the history has parallel tool calls; **`JSONDecodeError: Extra data`** is raised in "
    "`chat_utils.py` because the arguments of both calls are concatenated.",
    "On vllm 0.10.2 the qwen3_coder tool parser output makes the next turn fail with JSONDecodeError: Extra data: "
    "line 1 column 61 (char 60)",
]


@pytest.mark.parametrize("text", TOOL_PROSE)
def test_extra_data_in_tool_call_arguments_is_the_engines_bug(tmp_path, text):
    found = findings(tmp_path, f"## Bug\n\n{text}\n")
    assert found and found[0].engine_bug is not None


def test_extra_data_elsewhere_is_not_called_a_tool_call_bug(tmp_path):
    """A JSON flag value with a stray character is the user's typo, not the tool-call path."""
    text = ("vllm serve Qwen/Qwen3-8B --kv-transfer-config '{\"kv_connector\":\"NixlConnector\"}}' fails with "
            "json.decoder.JSONDecodeError: Extra data: line 1 column 32 (char 31)\n")
    assert all(f.engine_bug is None or "tool-call" not in f.engine_bug.why for f in findings(tmp_path, text))
