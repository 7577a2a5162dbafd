"""The static extractor replays vLLM's get_kwargs and SGLang's add_argument calls from source text alone."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

from extract_flag_schema import extract_sglang, extract_vllm  # noqa: E402

from doctor.flags.schema import NOT_RECORDED  # noqa: E402

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
    assert flags["--max-model-len"].type == "human_int_or_auto"   # "auto" / -1 fit the length to the KV cache
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


DEFAULTS_CONFIG = '''
DEFAULT_BLOCK = 16

@config
class CacheConfig:
    gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)
    block_size: int = Field(default=None, gt=0)
    swap_space: float = 4 * 1024
    sliding: list[int] = field(default_factory=list)

@config
class SchedulerConfig:
    max_num_seqs: int = 128
    max_num_batched_tokens: int = 2048
    policy: str = envs.POLICY

@config
class FrontendArgs:
    port: int = 8000
'''
DEFAULTS_ARGS = '''
class EngineArgs:
    max_num_seqs: int | None = None

    @staticmethod
    def add_cli_args(parser):
        cache_kwargs = get_kwargs(CacheConfig)
        parser.add_argument("--gpu-memory-utilization", **cache_kwargs["gpu_memory_utilization"])
        parser.add_argument("--block-size", **cache_kwargs["block_size"])
        parser.add_argument("--swap-space", **cache_kwargs["swap_space"])
        parser.add_argument("--sliding", **cache_kwargs["sliding"])
        scheduler_kwargs = get_kwargs(SchedulerConfig)
        parser.add_argument("--max-num-seqs", **{**scheduler_kwargs["max_num_seqs"], "default": None})
        parser.add_argument("--max-num-batched-tokens", **{**scheduler_kwargs["max_num_batched_tokens"],
                                                          "default": None})
        parser.add_argument("--policy", **scheduler_kwargs["policy"])
        parser.add_argument("--seed", type=int, default=DEFAULT_BLOCK * 2)
        parser.add_argument("--quiet", action="store_true")
        return parser

    def _set_default_max_num_seqs_and_batched_tokens_args(self):
        if self.max_num_seqs is None:
            self.max_num_seqs = 256
'''


def _defaults_schema():
    return extract_vllm("9.9.9", "w.whl", {"vllm/config/cache.py": DEFAULTS_CONFIG,
                                            "vllm/engine/arg_utils.py": DEFAULTS_ARGS,
                                            "vllm/entrypoints/openai/cli_args.py": VLLM_CLI})


def test_vllm_defaults_come_from_the_config_dataclass_fields() -> None:
    flags = _defaults_schema().flags
    assert flags["--gpu-memory-utilization"].default == 0.92
    assert flags["--swap-space"].default == 4096
    assert flags["--sliding"].default == []
    assert flags["--port"].default == 8000
    assert flags["--seed"].default == 32
    assert flags["--quiet"].default is False


def test_a_default_the_engine_resolves_at_startup_gets_its_rule_and_source() -> None:
    flags = _defaults_schema().flags
    seqs = flags["--max-num-seqs"]
    assert seqs.default is None and "get_batch_defaults" in (seqs.default_rule or "")
    assert seqs.default_source == ("vllm/engine/arg_utils.py::EngineArgs._set_default_max_num_seqs_and_batched_tokens_args",)
    # the same None, but no function of this wheel resolves it: no rule is invented
    tokens = flags["--max-num-batched-tokens"]
    assert tokens.default is None and tokens.default_rule is None


def test_a_default_that_is_not_a_literal_is_not_guessed() -> None:
    policy = _defaults_schema().flags["--policy"]
    assert policy.default is NOT_RECORDED and policy.default_rule == "computed: `envs.POLICY`"


def test_sglang_default_read_through_the_server_args_field() -> None:
    source = '''
class ServerArgs:
    mem_fraction_static: Optional[float] = None
    page_size: int = 1

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--mem-fraction-static", type=float, default=ServerArgs.mem_fraction_static)
        parser.add_argument("--page-size", type=int, default=ServerArgs.page_size)

    def _handle_gpu_memory_settings(self, gpu_mem):
        if self.mem_fraction_static is None:
            self.mem_fraction_static = 0.88
'''
    flags = extract_sglang("9.9.9", "w.whl", {"sglang/srt/server_args.py": source}).flags
    assert flags["--page-size"].default == 1
    mfs = flags["--mem-fraction-static"]
    assert mfs.default is None and mfs.default_source == ("sglang/srt/server_args.py::ServerArgs._handle_gpu_memory_settings",)
    assert "reserve" in (mfs.default_rule or "")


def test_vllm_batch_defaults_become_per_device_tiers() -> None:
    args = DEFAULTS_ARGS + '''
    @classmethod
    def get_batch_defaults(cls, world_size):
        device_memory = current_platform.get_device_total_memory()
        device_name = current_platform.get_device_name().lower()
        is_gb10 = current_platform.is_device_capability((12, 1))
        if device_memory >= 160 * GiB_bytes:
            default_max_num_batched_tokens = {UsageContext.LLM_CLASS: 16384, UsageContext.OPENAI_API_SERVER: 16384}
            default_max_num_seqs = {UsageContext.LLM_CLASS: 1024, UsageContext.OPENAI_API_SERVER: 1024}
        elif device_memory >= 70 * GiB_bytes and "a100" not in device_name and not is_gb10:
            default_max_num_batched_tokens = {UsageContext.LLM_CLASS: 16384, UsageContext.OPENAI_API_SERVER: 8192}
            default_max_num_seqs = {UsageContext.LLM_CLASS: 1024, UsageContext.OPENAI_API_SERVER: 1024}
        else:
            default_max_num_batched_tokens = {UsageContext.LLM_CLASS: 8192, UsageContext.OPENAI_API_SERVER: 2048}
            default_max_num_seqs = {UsageContext.LLM_CLASS: 256, UsageContext.OPENAI_API_SERVER: 256}
        return default_max_num_batched_tokens, default_max_num_seqs
'''
    flags = extract_vllm("9.9.9", "w.whl", {"vllm/config/cache.py": DEFAULTS_CONFIG, "vllm/engine/arg_utils.py": args,
                                             "vllm/entrypoints/openai/cli_args.py": VLLM_CLI}).flags
    seqs = [(t["min_memory_gib"], t["exclude_names"], t["exclude_capabilities"], t["value"])
            for t in flags["--max-num-seqs"].default_tiers]
    assert seqs == [(160, [], [], 1024), (70, ["a100"], [[12, 1]], 1024), (0, [], [], 256)]
    assert all(t["exact"] for t in flags["--max-num-seqs"].default_tiers)
