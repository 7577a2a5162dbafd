"""The one table of engine settings: every flag that moves memory, parallelism, speculative decoding, parsers and
the served endpoint, its typed field, and its names per backend.

A row names the long options (without `--`) of each backend as `vllm serve` (vllm/engine/arg_utils.py) and
`sglang.launch_server` (python/sglang/srt/server_args.py) define them; the synonyms of a backend version are
derived from its flag schema (doctor/flags/schemas, `aliases`: e.g. vLLM `-tp`, `--device-memory-utilization`,
SGLang `--tp-size` <-> `--tensor-parallel-size`). Adding a serving flag is one row here (plus, where it moves
memory, its rule in the planner).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

from doctor.flags.values import human_readable_int_or_auto

SIZE, FRACTION, LENGTH, WORD = "size", "fraction", "length", "word"   # typed in profiles (profiles/values.py)
INT, FLOAT, TEXT, BYTES_GIB, GRAPH_BACKEND, SWITCH = "int", "float", "text", "bytes_gib", "graph_backend", "switch"


@dataclass(frozen=True)
class Setting:
    """One row: the typed field, how its value reads, its names per backend; a switch sets `value`."""

    field: str
    kind: str
    vllm: tuple[str, ...] = ()
    sglang: tuple[str, ...] = ()
    value: Any = None

    def names(self, backend: str | None) -> tuple[str, ...]:
        """The row's long names for `backend` (both backends' when None), without `--`."""
        if backend is None:
            return self.vllm + tuple(n for n in self.sglang if n not in self.vllm)
        return self.vllm if backend == "vllm" else self.sglang

    @property
    def is_switch(self) -> bool:
        return self.kind == SWITCH


def _row(field: str, kind: str, vllm: str | tuple[str, ...] = (), sglang: str | tuple[str, ...] = (),
         value: Any = None) -> Setting:
    as_tuple = lambda names: (names,) if isinstance(names, str) else tuple(names)  # noqa: E731
    return Setting(field, kind, as_tuple(vllm), as_tuple(sglang), value)


SETTINGS: tuple[Setting, ...] = (
    # parallelism
    _row("tp", SIZE, "tensor-parallel-size", ("tp-size", "tensor-parallel-size")),
    _row("pp", SIZE, "pipeline-parallel-size", ("pp-size", "pipeline-parallel-size")),
    _row("dp", SIZE, "data-parallel-size", ("dp-size", "data-parallel-size")),
    _row("expert_parallel", SWITCH, "enable-expert-parallel", "enable-ep-moe", value=True),
    _row("distributed_executor_backend", TEXT, "distributed-executor-backend"),
    _row("nnodes", INT, (), "nnodes"),
    _row("dist_init_addr", TEXT, (), "dist-init-addr"),
    _row("node_rank", INT, (), "node-rank"),
    # memory
    _row("max_model_len", LENGTH, "max-model-len", "context-length"),
    _row("max_num_seqs", INT, "max-num-seqs", "max-running-requests"),
    _row("max_num_batched_tokens", INT, "max-num-batched-tokens", "chunked-prefill-size"),
    _row("gpu_memory_utilization", FRACTION, "gpu-memory-utilization"),
    _row("mem_fraction_static", FRACTION, (), "mem-fraction-static"),
    _row("kv_cache_memory_gib", BYTES_GIB, ("kv-cache-memory", "kv-cache-memory-bytes")),
    _row("kv_cache_dtype", TEXT, "kv-cache-dtype", "kv-cache-dtype"),
    _row("block_size", INT, "block-size", "page-size"),
    _row("quantization", WORD, "quantization", "quantization"),
    _row("dtype", TEXT, "dtype", "dtype"),
    _row("mm_encoder_tp_mode", TEXT, "mm-encoder-tp-mode"),
    _row("moe_backend", TEXT, "moe-backend"),
    _row("all2all_backend", TEXT, "all2all-backend"),
    _row("extensible_kv_cache", SWITCH, "enable-extensible-kv-cache", value=True),
    _row("extensible_kv_cache", SWITCH, "no-enable-extensible-kv-cache", value=False),
    _row("limit_mm_per_prompt", TEXT, "limit-mm-per-prompt"),
    _row("language_model_only", SWITCH, "language-model-only", "language-only", value=True),
    _row("skip_mm_profiling", SWITCH, "skip-mm-profiling", value=True),
    _row("mamba_full_memory_ratio", FLOAT, (), "mamba-full-memory-ratio"),
    _row("max_mamba_cache_size", INT, (), "max-mamba-cache-size"),
    _row("mamba_ssm_dtype", TEXT, (), "mamba-ssm-dtype"),
    _row("mamba_ssm_cache_dtype", TEXT, "mamba-ssm-cache-dtype"),
    _row("mamba_radix_strategy", TEXT, (), ("mamba-radix-cache-strategy", "mamba-scheduler-strategy")),
    _row("mamba_cache_mode", TEXT, "mamba-cache-mode"),
    _row("prefix_caching", SWITCH, "enable-prefix-caching", value=True),
    _row("prefix_caching", SWITCH, "no-enable-prefix-caching", "disable-radix-cache", value=False),
    # CUDA graphs: SGLang --disable-piecewise-cuda-graph (0.5.10-0.5.19) and --disable-prefill-cuda-graph
    # (0.5.14+) turn the prefill graphs off; the enable / enforce switches lock them on (server_args.py
    # _parse_cuda_graph_config and its deprecated aliases, 0.5.16-0.5.19).
    _row("enforce_eager", SWITCH, "enforce-eager", "disable-cuda-graph", value=True),
    _row("cuda_graph_max_bs", INT, (), ("cuda-graph-max-bs", "cuda-graph-max-bs-decode")),
    _row("prefill_cuda_graph", GRAPH_BACKEND, (), "cuda-graph-backend-prefill"),
    _row("prefill_cuda_graph", SWITCH, (), ("disable-prefill-cuda-graph", "disable-piecewise-cuda-graph"),
         value=False),
    _row("prefill_cuda_graph", SWITCH, (), ("enable-piecewise-cuda-graph", "enforce-piecewise-cuda-graph",
                                            "enable-breakable-cuda-graph"), value=True),
    _row("overlap_schedule", SWITCH, (), "disable-overlap-schedule", value=False),
    # speculative decoding
    _row("speculative_config", TEXT, "speculative-config"),
    _row("speculative_algorithm", TEXT, (), "speculative-algorithm"),
    _row("speculative_draft_model", TEXT, (), ("speculative-draft-model-path", "speculative-draft-model")),
    _row("speculative_num_steps", TEXT, (), "speculative-num-steps"),
    _row("speculative_num_draft_tokens", TEXT, (), "speculative-num-draft-tokens"),
    # parsers, served name, weights, API
    _row("reasoning_parser", TEXT, "reasoning-parser", "reasoning-parser"),
    _row("tool_call_parser", TEXT, "tool-call-parser", "tool-call-parser"),
    _row("auto_tool_choice", SWITCH, "enable-auto-tool-choice", value=True),
    _row("served_model_name", TEXT, "served-model-name", "served-model-name"),
    _row("tokenizer", TEXT, "tokenizer", "tokenizer-path"),
    _row("load_format", TEXT, "load-format", "load-format"),
    _row("structured_outputs_config", TEXT, "structured-outputs-config"),
    _row("json_disable_any_whitespace", SWITCH, (), "constrained-json-disable-any-whitespace", value=True),
    _row("api_key", TEXT, "api-key", "api-key"),
    _row("metrics", SWITCH, (), "enable-metrics", value=True),   # vLLM always serves /metrics
)

# The endpoint and the model are Deployment fields of their own, not settings.
ENDPOINT_OPTIONS = ("host", "port")
MODEL_OPTIONS = ("model", "model-path")


class SettingError(ValueError):
    """A setting's value that does not read as its kind; the message names the option and the value."""

    def __init__(self, option: str, value: Any) -> None:
        super().__init__(f"{option} needs a value" if value is None else f"{option} {value!r} is not a valid value")
        self.option = option
        self.value = value


def byte_size(text: str) -> int:
    """vLLM's human-readable byte sizes: 62887755879, 58G, 58GiB, 1.5g."""
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(t[-1:], 1)
    return int(float(t[:-1] if scale != 1 else t) * scale)


_READERS: dict[str, Callable[[str], Any]] = {
    SIZE: int, INT: int, LENGTH: int, FLOAT: float, FRACTION: float, WORD: str, TEXT: str,
    BYTES_GIB: lambda v: byte_size(v) / (1 << 30),
    GRAPH_BACKEND: lambda v: v.strip().lower() != "disabled",
}


@lru_cache(maxsize=64)
def spellings(backend: str | None, version: str | None = None) -> dict[str, Setting]:
    """Every option string (with dashes) that sets a row, for `backend` (both when None) at `version` (the
    newest flag schema when None): the rows' names plus the schema's aliases of them."""
    out: dict[str, Setting] = {}
    for row in SETTINGS:
        for name in row.names(backend):
            out.setdefault(f"--{name}", row)
    for schema_backend in ((backend,) if backend else ("vllm", "sglang")):
        for alias, canonical in _aliases(schema_backend, version).items():
            row = out.get(canonical) or out.get(alias)
            if row is not None:
                out.setdefault(alias, row)
                out.setdefault(canonical, row)
    return out


def _aliases(backend: str, version: str | None) -> dict[str, str]:
    from doctor.flags.schema import SchemaError, load_schema

    try:
        return dict(load_schema(backend, version).aliases)
    except SchemaError:
        return {}


def spellings_of(field: str, backend: str | None = None, version: str | None = None) -> tuple[str, ...]:
    """Every option string that sets `field` for `backend` (both when None): its rows' names, then the schema's
    aliases of them (`--pipeline-parallel-size`, `--pp-size`, `-pp`)."""
    return tuple(name for name, row in spellings(backend, version).items() if row.field == field)


def row_of(option: str, backend: str | None = None, version: str | None = None) -> Setting | None:
    """The row an option string (`--max_model_len`, `-tp`, `--context-length`, or a unique prefix such as SGLang's
    documented `--speculative-algo`: both engines parse with argparse's default allow_abbrev) sets, or None."""
    normal = "--" + option[2:].replace("_", "-") if option.startswith("--") else option
    found = spellings(backend, version).get(normal)
    if found is None and backend is not None and normal.startswith("--"):
        whole = _abbreviated(normal, backend, version)
        found = spellings(backend, version).get(whole) if whole else None
    return found


def _abbreviated(prefix: str, backend: str, version: str | None) -> str | None:
    """The one option of the backend's parser that `prefix` abbreviates (argparse allow_abbrev), or None."""
    from doctor.flags.schema import SchemaError, load_schema

    try:
        matches = load_schema(backend, version).starting_with(prefix)
    except SchemaError:
        return None
    return matches[0] if len(matches) == 1 else None


def read(option: str, value: Any, backend: str | None = None, version: str | None = None
         ) -> tuple[str, Any] | None:
    """(field, typed value) that `option` given `value` sets (True: given bare, False: `--no-` form of a profile
    switch), or None when the option is no setting. Raises SettingError on an unreadable value."""
    if value is False:
        option, value = "--no-" + option.lstrip("-"), True
    row = row_of(option, backend, version)
    if row is None:
        return None
    if row.is_switch:
        return (row.field, row.value) if value is True else None
    if value is True:
        raise SettingError(option, None)
    text = _text(value)
    try:
        if row.kind == LENGTH and backend != "sglang":
            return row.field, human_readable_int_or_auto(text)
        return row.field, _READERS[row.kind](text)
    except (ValueError, IndexError, OverflowError):
        raise SettingError(option, text) from None


def _text(value: Any) -> str:
    import json

    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, (list, tuple)):
        return str(value[0]) if value else ""
    return str(value)


def field_names(backend: str | None, *fields: str) -> tuple[str, ...]:
    """The long names (without `--`) that set any of `fields` for `backend`, in table order."""
    out: list[str] = []
    for row in SETTINGS:
        if row.field in fields:
            out += [n for n in row.names(backend) if n not in out]
    return tuple(out)


def switch_names(field: str, value: Any, backend: str | None = None) -> tuple[str, ...]:
    """The long names (without `--`) of the switches that set `field` to `value`: ("no-enable-prefix-caching",
    "disable-radix-cache") for prefix_caching False."""
    return tuple(n for row in SETTINGS if row.field == field and row.is_switch and row.value == value
                 for n in row.names(backend))


def option(field: str, backend: str | None = None) -> str:
    """The option that sets `field` (the backend's first name for it), for messages: `--max-model-len`."""
    return "--" + field_names(backend, field)[0]


def typed_profile_names() -> dict[str, str]:
    """Profile flag name -> kind, for the rows whose values profiles type-check (size, fraction, length, word)."""
    return {name: row.kind for row in SETTINGS if row.kind in (SIZE, FRACTION, LENGTH, WORD)
            for name in row.names(None)}
