"""The typed Deployment: built once from a profile (plus overrides) or from a foreign command line through the one
settings table; argv() renders it; every reader gets typed settings, never argv parsed back."""

from __future__ import annotations

import pytest

from doctor.deployment import Deployment, SettingError, from_argv, read_engine_args
from doctor.deployment import table
from profiles import load_profile


def test_a_profile_builds_one_deployment_with_typed_settings() -> None:
    d = load_profile("vllm-throughput").deployment({"port": 8123})
    assert isinstance(d, Deployment) and d.backend == "vllm" and d.launcher.name == "vllm-serve"
    assert d.model == "Qwen/Qwen3.5-35B-A3B" and d.endpoint.port == 8123
    s = d.settings
    assert (s.tp, s.max_model_len, s.max_num_seqs, s.gpu_memory_utilization, s.prefix_caching) == \
           (2, 32768, 512, 0.92, True)
    assert s.reasoning_parser == "qwen3" and s.speculative_config is None
    assert [f.option for f in d.remaining] == ["--enable-chunked-prefill"]


def test_sglang_names_fill_the_same_fields() -> None:
    s = load_profile("sglang-interactive").deployment().settings
    assert (s.tp, s.max_model_len, s.mem_fraction_static) == (2, 262144, 0.8)
    assert (s.speculative_algorithm, s.speculative_num_steps, s.mamba_radix_strategy) == ("EAGLE", "3", "extra_buffer")


def test_a_foreign_command_line_renders_back_token_for_token() -> None:
    argv = ["vllm", "serve", "Qwen/X", "-tp", "2", "--max_model_len", "8192", "--enforce-eager", "--port=8001",
            "--limit-mm-per-prompt", "image=0,video=0", "--unknown", "a", "b", "--served-model-name", "q"]
    d = from_argv(argv, "vllm")
    assert d.argv() == argv
    assert d.model == "Qwen/X" and d.endpoint.port == 8001 and d.served_model_name == "q"
    assert (d.settings.tp, d.settings.max_model_len, d.settings.enforce_eager) == (2, 8192, True)


def test_schema_aliases_are_synonyms_of_the_row() -> None:
    """vLLM 0.32 names --gpu-memory-utilization an alias of --device-memory-utilization; -tp of the TP size."""
    assert table.row_of("--device-memory-utilization", "vllm", "0.32.0").field == "gpu_memory_utilization"
    assert table.row_of("-tp", "vllm").field == "tp"
    assert table.row_of("--tensor-parallel-size", "sglang").field == "tp"
    assert table.row_of("--tp-size", "vllm") is None


def test_an_unreadable_value_names_the_option() -> None:
    with pytest.raises(SettingError, match=r"--max-model-len 'long' is not a valid value"):
        read_engine_args(["--max-model-len", "long"])
    with pytest.raises(SettingError, match="--tp-size needs a value"):
        read_engine_args(["--tp-size"])


def test_with_setting_uses_the_backends_own_name_and_moves_it_last() -> None:
    d = from_argv(["python", "-m", "sglang.launch_server", "--model-path", "m", "--load-format", "auto", "--tp-size",
                   "2"], "sglang")
    out = d.with_setting("load_format", "dummy").with_setting("json_disable_any_whitespace", True)
    assert out.argv()[-3:] == ["--load-format", "dummy", "--constrained-json-disable-any-whitespace"]
    assert out.argv().count("--load-format") == 1


def test_a_missing_variable_is_one_profile_error() -> None:
    from profiles import ProfileError

    with pytest.raises(ProfileError, match="variable 'model_dir' has no value"):
        load_profile("cpu-tiny").deployment()


def test_mamba_ssm_cache_dtype_is_one_row_and_the_planner_prices_it() -> None:
    """vLLM --mamba-ssm-cache-dtype (one row in the table) sets the GDN recurrent state's dtype; auto keeps the
    checkpoint's float32 (vllm model_executor/models/config.py Qwen3_5ForConditionalGenerationConfig)."""
    from doctor.models import get_model
    from doctor.planner import ServeConfig
    from doctor.planner.flags import config_kwargs
    from doctor.planner.state import gdn_state_bytes_per_layer

    spec = get_model("Qwen/Qwen3.5-35B-A3B")
    kwargs = config_kwargs(["--mamba-ssm-cache-dtype", "bfloat16"])
    assert kwargs == {"mamba_ssm_cache_dtype": "bfloat16"}
    fp32 = gdn_state_bytes_per_layer(spec, ServeConfig())
    auto = gdn_state_bytes_per_layer(spec, ServeConfig(mamba_ssm_cache_dtype="auto"))
    bf16 = gdn_state_bytes_per_layer(spec, ServeConfig(**kwargs))
    g = spec.linear_attention
    temporal = g.num_value_heads * g.value_head_dim * g.key_head_dim
    assert auto == fp32 and fp32 - bf16 == temporal * 2
    assert gdn_state_bytes_per_layer(spec, ServeConfig(backend="sglang", **kwargs)) == fp32


def test_a_pasted_command_is_found_after_what_precedes_its_launcher() -> None:
    from doctor.deployment import launch_in

    d = launch_in("CUDA_VISIBLE_DEVICES=0,1 uv run python3 -m sglang.launch_server --model-path m --tp-size 2 "
                  "# a comment", "sglang")
    assert d is not None and d.engine_args() == ["--model-path", "m", "--tp-size", "2"] and d.settings.tp == 2
    assert launch_in("/opt/bin/vllm serve Qwen/X --max-model-len 4096", "vllm").engine_args() == \
           ["Qwen/X", "--max-model-len", "4096"]
    assert launch_in("echo hello", "vllm") is None


def test_a_unique_prefix_reads_as_the_option_it_abbreviates_as_argparse_does() -> None:
    """Both engines parse with argparse's default allow_abbrev: SGLang's docs write `--speculative-algo NEXTN`."""
    sg = from_argv(["python", "-m", "sglang.launch_server", "--speculative-algo", "NEXTN", "--mem-fraction", "0.8"],
                   "sglang")
    assert (sg.settings.speculative_algorithm, sg.settings.mem_fraction_static) == ("NEXTN", 0.8)
    ambiguous = from_argv(["vllm", "serve", "m", "--max-num", "8"], "vllm")   # --max-num-seqs / -batched-tokens
    assert ambiguous.settings.max_num_seqs is None and ambiguous.settings.max_num_batched_tokens is None


def test_vllm_reads_max_model_len_in_its_human_readable_forms_and_sglang_only_as_an_integer() -> None:
    from doctor.deployment.table import SettingError, read

    assert read("--max-model-len", "25.6k", "vllm") == ("max_model_len", 25_600)
    assert read("--max-model-len", "32K", "vllm") == ("max_model_len", 32_768)
    assert read("--max-model-len", "128k", "vllm") == ("max_model_len", 128_000)
    for refused, backend in (("1.5K", "vllm"), ("32k", "sglang"), ("lots", "vllm")):
        with pytest.raises(SettingError):
            read("--max-model-len" if backend == "vllm" else "--context-length", refused, backend)
