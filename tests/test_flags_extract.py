"""The static extractor replays vLLM's get_kwargs and SGLang's add_argument calls from source text alone."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

from extract_flag_schema import extract_sglang, extract_vllm  # noqa: E402

VLLM_CONFIG = '''
from typing import Literal
ModelDType = Literal["auto", "half", "bfloat16"]

@config
class ModelConfig:
    dtype: ModelDType | None = "auto"
    enforce_eager: bool = False
    max_model_len: int | None = None
    served_model_name: list[str] | None = None
    hf_overrides: dict | None = None

@config
class SpeculativeConfig:
    method: str = "mtp"

@config
class FrontendArgs:
    port: int = 8000
'''
VLLM_ARGS = '''
class EngineArgs:
    @staticmethod
    def add_cli_args(parser):
        model_kwargs = get_kwargs(ModelConfig)
        group = parser.add_argument_group("m")
        group.add_argument("--dtype", **model_kwargs["dtype"])
        group.add_argument("--enforce-eager", **model_kwargs["enforce_eager"])
        group.add_argument("--max-model-len", **{**model_kwargs["max_model_len"], "default": None})
        group.add_argument("--served-model-name", **model_kwargs["served_model_name"])
        group.add_argument("--hf-overrides", **model_kwargs["hf_overrides"])
        group.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
        group.add_argument("--old-flag", action="store_true", deprecated=True)
        return parser
'''
VLLM_CLI = '''
def make_arg_parser(parser):
    parser.add_argument("model_tag", nargs="?")
    parser.add_argument("--headless", action="store_true")
    frontend_kwargs = get_kwargs(FrontendArgs)
    for key, value in frontend_kwargs.items():
        parser.add_argument(f"--{key}", **value)
    parser = EngineArgs.add_cli_args(parser)
    return parser
'''
SGLANG = '''
QUANTIZATION_CHOICES = ["fp8", "awq"]

class ServerArgs:
    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--model-path", "--model", type=str, required=True)
        parser.add_argument("--tp-size", "--tensor-parallel-size", type=int, default=1)
        parser.add_argument("--quantization", type=str, choices=QUANTIZATION_CHOICES)
        parser.add_argument("--disable-radix-cache", action="store_true")
        parser.add_argument("--old", type=str, action=DeprecatedAliasStoreAction, new_flag="--new")
'''


def test_vllm_flags_follow_the_config_annotations() -> None:
    schema = extract_vllm("9.9.9", "w.whl", {"vllm/config/model.py": VLLM_CONFIG,
                                              "vllm/engine/arg_utils.py": VLLM_ARGS,
                                              "vllm/entrypoints/openai/cli_args.py": VLLM_CLI})
    flags = schema.flags
    assert flags["--dtype"].choices == ("auto", "bfloat16", "half", "None")
    assert flags["--enforce-eager"].action == "bool_optional" and schema.lookup("--no-enforce-eager")
    assert flags["--max-model-len"].type == "human_int"
    assert flags["--served-model-name"].nargs == "+"
    assert flags["--hf-overrides"].type == "json"
    assert flags["--port"].type == "int" and flags["--headless"].action == "store_true"
    assert schema.aliases["-tp"] == "--tensor-parallel-size" and flags["--old-flag"].deprecated
    assert schema.normalize_underscores


def test_sglang_explicit_arguments_and_module_constants() -> None:
    schema = extract_sglang("9.9.9", "w.whl", {"sglang/srt/server_args.py": SGLANG})
    assert schema.aliases["--model"] == "--model-path"
    assert schema.aliases["--tp-size"] == "--tensor-parallel-size"
    assert schema.flags["--quantization"].choices == ("fp8", "awq")
    assert schema.flags["--disable-radix-cache"].action == "store_true"
    assert schema.flags["--old"].deprecated and schema.flags["--old"].takes_value
    assert not schema.normalize_underscores
