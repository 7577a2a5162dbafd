"""An SGLang boot log's own memory figures, for re-planning other flags from them (`plan --from-log`).

Lines read (sglang 0.5.x, srt/model_executor/model_runner.py, model_runner_kv_cache_mixin.py, server_args.py;
as tests/fixtures/h200-rehearsal/sglang-bf16-vision.log shows them for 0.5.16):
  "server_args=ServerArgs(model_path=..., mem_fraction_static=0.8, ..., context_length=262144, ...)"
  "Load weight begin. avail mem=139.07 GB"
  "Load weight end. elapsed=0.18 s, type=Qwen3_5MoeForConditionalGeneration, avail mem=73.58 GB, mem usage=65.49 GB."
  "Mamba Cache is allocated. max_mamba_cache_size: 361, conv_state size: 0.50GB, ssm_state size: 21.21GB"
  "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1261250, K size: 12.03 GB, V size: 12.03 GB"
  "max_total_num_tokens=1261250, chunked_prefill_size=8192, ..., max_running_requests=72, context_len=262144"
SGLang's "GB" are GiB (it divides by 1 << 30). The log does not name SGLang's version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from doctor.planner.bootlog import read_log_text
from doctor.planner.errors import PlanInputError

_SERVER_ARGS = re.compile(r"server_args=ServerArgs\((.*)")
LOAD_BEGIN = re.compile(r"Load weight begin\. avail mem=([\d.]+) GB")
LOAD_END = re.compile(r"Load weight end\..*?avail mem=([\d.]+) GB, mem usage=([\d.]+) GB")
MAMBA_SLOTS = re.compile(r"Mamba Cache is allocated\. max_mamba_cache_size: (\d+)")
KV_TOKENS = re.compile(r"KV Cache is allocated\.(?: dtype: [\w.]+,)? #tokens: (\d+)")
RUNNING = re.compile(r"max_total_num_tokens=\d+, .*?max_running_requests=(\d+)")


def _arg(args: str, name: str) -> str | None:
    """The value of `name=` in the ServerArgs dump (a top-level field: not part of a longer name)."""
    m = re.search(rf"(?<![\w.]){name}=('(?:[^']*)'|[^,)]*)", args)
    if m is None:
        return None
    value = m.group(1).strip("'")
    return None if value == "None" else value


@dataclass(frozen=True)
class SglangBootLog:
    """What one SGLang boot logged (None: not in the log)."""

    mem_fraction_static: float | None
    context_length: int | None
    tp: int | None
    pp: int | None
    kv_cache_dtype: str | None
    max_running_requests: int | None       # the flag (None: SGLang derives it)
    chunked_prefill_size: int | None
    radix_cache: bool | None
    max_mamba_cache_size: int | None
    mamba_full_memory_ratio: float | None
    mamba_ssm_dtype: str | None            # --mamba-ssm-dtype (None: the checkpoint's)
    mamba_radix_strategy: str | None       # mamba_radix_cache_strategy (0.5.14+) / mamba_scheduler_strategy
    overlap_schedule: bool | None          # not disable_overlap_schedule
    page_size: int | None
    avail_before_gib: float
    avail_after_gib: float
    weights_gib: float
    kv_tokens: int | None
    mamba_slots: int | None
    running: int | None                    # what SGLang resolved


def is_sglang_log(text: str) -> bool:
    return bool(LOAD_END.search(text) or _SERVER_ARGS.search(text))


def parse_sglang_boot_log(text: str) -> SglangBootLog | None:
    """The figures of the first engine boot in `text`, or None without a "Load weight end" line."""
    end = LOAD_END.search(text)
    if end is None:
        return None
    m = _SERVER_ARGS.search(text)
    args = m.group(1) if m else ""

    def number(name: str, kind: type = int) -> object:
        value = _arg(args, name)
        try:
            return kind(value) if value is not None else None
        except ValueError:
            return None

    def found(pattern: re.Pattern[str]) -> int | None:
        hit = pattern.search(text)
        return int(hit.group(1)) if hit else None

    begin = LOAD_BEGIN.search(text)
    after, usage = float(end.group(1)), float(end.group(2))
    radix = _arg(args, "disable_radix_cache")
    no_overlap = _arg(args, "disable_overlap_schedule")
    return SglangBootLog(
        mem_fraction_static=number("mem_fraction_static", float), context_length=number("context_length"),
        tp=number("tp_size"), pp=number("pp_size"), kv_cache_dtype=_arg(args, "kv_cache_dtype"),
        max_running_requests=number("max_running_requests"), chunked_prefill_size=number("chunked_prefill_size"),
        radix_cache=None if radix is None else radix != "True",
        max_mamba_cache_size=number("max_mamba_cache_size"),
        mamba_full_memory_ratio=number("mamba_full_memory_ratio", float),
        mamba_ssm_dtype=_arg(args, "mamba_ssm_dtype"),
        mamba_radix_strategy=_arg(args, "mamba_radix_cache_strategy") or _arg(args, "mamba_scheduler_strategy"),
        overlap_schedule=None if no_overlap is None else no_overlap != "True", page_size=number("page_size"),
        avail_before_gib=float(begin.group(1)) if begin else after + usage, avail_after_gib=after,
        weights_gib=usage, kv_tokens=found(KV_TOKENS), mamba_slots=found(MAMBA_SLOTS), running=found(RUNNING))


def read_sglang_boot_log(path: str) -> SglangBootLog:
    """Read an SGLang boot log (bounded); one without the weight-load lines is a PlanInputError."""
    return sglang_boot_log_from_text(read_log_text(path), path)


def sglang_boot_log_from_text(text: str, path: str) -> SglangBootLog:
    """The SGLang boot figures of `text` read from `path`; PlanInputError without the weight-load lines."""
    boot = parse_sglang_boot_log(text)
    if boot is None or boot.mem_fraction_static is None:
        raise PlanInputError(f"--from-log {path}: no SGLang 'server_args=ServerArgs(' and 'Load weight end' lines "
                             "(an SGLang boot log that loaded its weights is needed)")
    return boot
