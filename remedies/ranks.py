"""Untangle the tracebacks of workers that failed at the same time, one block per worker.

Tensor- and data-parallel workers print through one terminal or one collector, each line under its worker's
prefix: vLLM's `(VllmWorker TP1 pid=…)` / `(EngineCore_DP0 pid=…)` and Ray's `(RayWorkerWrapper pid=…,
ip=…)` (ray python/ray/_private/worker.py print_worker_logs), torchrun's `[rank3]:` / `[default0]:`
(torch/distributed/elastic/multiprocessing/api.py, tee / local_ranks_filter), mpirun's `[1,0]<stderr>:`
(Open MPI --tag-output), SGLang's `[2026-… TP0]` (python/sglang/srt/utils.py configure_logger, prefix
` DP0 TP0 EP0` etc.), `kubectl logs --prefix`'s `[pod/name/container]` and docker compose's `svc-1  | `.
When several fail together, their frames interleave and no single run of lines is one traceback.

`gather(lines)` finds the workers whose tracebacks overlap and moves each one's lines into one block, at
the place of the last of them, the most informative first: a traceback that prints its exception (with a
message) before one that does not, then the one that started first. Other lines keep their order.
"""

from __future__ import annotations

import re

from remedies.crash import HEADER, exception_line
from remedies.normalise import normalise

HEAD_CHARS = 240
_KEYS = (
    re.compile(r"\((?P<key>[^()\n]{0,80}?\bpid=\d{1,10}[^()\n]{0,80})\)"),
    re.compile(r"\[(?P<key>(?:rank|default)\d{1,6})\]:"),
    re.compile(r"\[(?P<key>\d{1,6},\d{1,6})\]<std(?:out|err)>:"),
    re.compile(r"\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?P<key>(?: (?:DP|TP|PP|EP|CP|ATTN_DP|MOE_DP)\d{1,5}){1,6})\]"),
    re.compile(r"^\[(?P<key>pod/[\w.-]{1,253}/[\w.-]{1,63})\] "),
    re.compile(r"^(?P<key>[A-Za-z][\w.-]{0,63}-\d{1,4})[ \t]{1,16}\|[ \t]"),
)
_FRAME = re.compile(r'^[ \t]*File "[^"\n]{1,2048}", line \d{1,9}')
_Lines = list[tuple[int, str]]


def worker(text: str) -> str | None:
    """The worker a raw line was printed by, from its prefixes (several nested prefixes joined), or None."""
    head = text[:HEAD_CHARS]
    keys = [found.group("key").strip() for pattern in _KEYS for found in [pattern.search(head)] if found]
    return " ".join(keys) if keys else None


def gather(lines: _Lines) -> _Lines | None:
    """The lines with the interleaved workers' tracebacks gathered (see the module doc), or None when no two
    workers' tracebacks interleave."""
    if sum(HEADER in text for _, text in lines) < 2:
        return None  # fewer than two tracebacks cannot interleave
    keys = [worker(text) for _, text in lines]
    if len({k for k in keys if k is not None}) < 2:
        return None
    kinds = [_kind(normalise(text).text) if key is not None else "" for key, (_, text) in zip(keys, lines)]
    spans: dict[str, tuple[int, int]] = {}
    for index, (key, kind) in enumerate(zip(keys, kinds)):
        if key is None or not kind:
            continue
        if kind == "header" and key not in spans:
            spans[key] = (index, index)
        elif key in spans:
            spans[key] = (spans[key][0], index)
    tangled = {key for key, (start, end) in spans.items()
               if any(keys[i] not in (key, None) and kinds[i] for i in range(start + 1, end))}
    if not tangled:
        return None
    tangled |= {keys[i] for key in list(tangled) for i in range(spans[key][0] + 1, spans[key][1])
                if keys[i] in spans and kinds[i]}
    start = min(spans[key][0] for key in tangled)
    members = [i for i in range(start, len(lines)) if keys[i] in tangled]
    blocks = {key: [i for i in members if keys[i] == key] for key in tangled}
    order = sorted(tangled, key=lambda key: _informative(blocks[key], kinds), reverse=True)
    last = members[-1]
    moved = set(members)
    out: _Lines = []
    for index, line in enumerate(lines):
        if index not in moved:
            out.append(line)
        elif index == last:
            out += [lines[i] for key in order for i in blocks[key]]
    return out


def _kind(text: str) -> str:
    """What a normalised line is to a traceback: its header, a frame, its exception, or nothing."""
    stripped = text.strip()
    if stripped.startswith(HEADER) or stripped.rstrip(":").endswith(HEADER):
        return "header"
    if _FRAME.match(text):
        return "frame"
    if exception_line(stripped) and ":" in stripped:
        return "exception"
    if text[:1] in " \t" and stripped:
        return "statement"
    return ""


def _informative(block: list[int], kinds: list[str]) -> tuple[bool, int]:
    """How much a worker's block tells: whether it prints its exception, then the one that started first (a
    wrapper that reports a worker's failure, such as vLLM's EngineCore, starts after the worker)."""
    return any(kinds[i] == "exception" for i in block), -block[0]
