"""Exercises of what the server has switched on: image input (the vision tower), speculative decoding's
acceptance, and prefix-cache hits, judged from the answers and from the server's own /metrics.

- Image: a small PNG generated here (no file read) sent as a data URL. vLLM refuses images with
  `--language-model-only` ("At most 0 image(s) may be provided in one prompt.", vllm/multimodal/processing/
  context.py), so the exercise is skipped with that reason there.
- Speculative decoding: the acceptance rate and mean accepted length over a short and a long prompt (MTP
  acceptance collapsing at long context: sgl-project/sglang#30763), from the counters or gauges
  server_metrics reads.
- Prefix cache: the same long prompt twice; the second request's hit rate and TTFT. On the hybrid Qwen3.5 (GDN
  + attention) vLLM caches prefixes in mamba cache mode `align` only at block boundaries and can give 0 hits
  (vllm-project/vllm#51250, #42317; blocks of 528+ tokens, #40696), so the prompt is longer than that and a
  miss is a warning naming the mode.
"""

from __future__ import annotations

import struct
import time
import uuid
import zlib
from typing import Any

import httpx

from doctor.deploy import server_metrics
from doctor.deploy.exercise import STREAM_OPTIONS, Exercise, ExerciseConfig, http_error, message_of, \
    reasoning_of, stream_request, budget
from doctor.deploy.server_metrics import MetricsError, Snapshot, scrape
from doctor.deployment.table import option, switch_names
from doctor.safeio import reply_json

IMAGE_REFUSED = ("may be provided in one prompt", "not a multimodal model", "image input is not supported")
LOW_ACCEPTANCE = 0.3  # below this, drafting costs more than it saves (a heuristic, not an engine figure)
PREFIX_WORDS = 1000  # ~2,500 tokens: longer than the hybrid's attention block (528 tokens and up, vllm#40696)
# "Fact 12: 12 is even." is 5 words and about 12 tokens with Qwen's and the tiny test model's tokenizers (a vLLM
# CPU run refused a 98-word prompt as 257 tokens).
TOKENS_PER_WORD = 2.7
SPEC_TOKENS = 128


def png(width: int = 16, height: int = 16, rgb: tuple[int, int, int] = (220, 30, 30)) -> bytes:
    """A solid-colour RGB PNG (signature, IHDR, one zlib IDAT, IEND)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


async def image(client: httpx.AsyncClient, cfg: ExerciseConfig) -> Exercise:
    """A chat with a small generated image: answered (content or reasoning) when the vision tower is loaded."""
    if cfg.traits.vision is False:
        return Exercise("image", "skip", f"{cfg.traits.no_vision_reason or 'the vision tower is not loaded'}: "
                        "the server refuses images by design")
    import base64

    url = "data:image/png;base64," + base64.b64encode(png()).decode()
    t0 = time.perf_counter()
    r = await client.post("/v1/chat/completions", json={
        "model": cfg.model, "max_tokens": 64, "temperature": 0,
        "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                  {"type": "text", "text": "What colour is this image?"}]}]})
    dt = time.perf_counter() - t0
    if r.status_code != 200:
        if r.status_code == 400 and any(h in r.text for h in IMAGE_REFUSED) and cfg.traits.vision is None:
            return Exercise("image", "skip", f"the server refuses images (text-only launch): {http_error(r)}", dt)
        return Exercise("image", "fail", f"an image request failed with the vision tower loaded: {http_error(r)}",
                        dt)
    body = reply_json(r.content)
    msg = message_of(body)
    answer = (msg.get("content") or "") or reasoning_of(msg)
    prompt_tokens = int((body.get("usage") or {}).get("prompt_tokens") or 0)
    data = {"content": answer[:200], "prompt_tokens": prompt_tokens}
    if not answer.strip():
        return Exercise("image", "fail", "the image request was answered with nothing", dt, data)
    return Exercise("image", "ok", f"a 16x16 PNG was read ({prompt_tokens} prompt tokens) and answered "
                    f"{answer.strip()[:60]!r} in {dt:.2f} s", dt, data)


def _acceptance(before: Snapshot, after: Snapshot) -> dict[str, float] | None:
    """(acceptance rate, mean accepted length) between two scrapes: vLLM's counters, else SGLang's gauges."""
    drafts, tokens = after.delta("spec_drafts", before), after.delta("spec_draft_tokens", before)
    accepted = after.delta("spec_accepted", before)
    if drafts is not None and tokens is not None and accepted is not None:
        if drafts <= 0:
            return {"drafts": 0.0}
        return {"drafts": drafts, "acceptance_rate": accepted / tokens if tokens else 0.0,
                "mean_accepted_length": 1 + accepted / drafts}
    if "spec_accept_length" in after.latest:
        return {"drafts": -1.0, "acceptance_rate": after.latest.get("spec_accept_rate", 0.0),
                "mean_accepted_length": after.latest["spec_accept_length"]}
    return None


def long_prompt(words: int, max_model_len: int | None, nonce: str = "") -> str:
    """A deterministic prompt of about `words` words, cut to fit 40% of the context (the rest is for the answer)."""
    if max_model_len:
        words = max(16, min(words, int(max_model_len * 0.4 / TOKENS_PER_WORD)))
    sentences = (f"Fact {i}: {i} is {'even' if i % 2 == 0 else 'odd'}." for i in range(10**6))
    text: list[str] = []
    while sum(len(s.split()) for s in text) < words:
        text.append(next(sentences))
    return f"[{nonce}] " + " ".join(text) + " Which fact mentions 3?"


async def speculative(client: httpx.AsyncClient, cfg: ExerciseConfig) -> Exercise:
    """Acceptance rate and mean accepted length over a short and a long prompt, from /metrics."""
    if cfg.traits.known and not cfg.traits.speculative:
        return Exercise("speculative", "skip", f"no drafter or MTP configured ({option('speculative_config', 'vllm')} / "
                        f"{option('speculative_algorithm', 'sglang')})")
    t0 = time.perf_counter()
    rows: dict[str, dict[str, float]] = {}
    try:
        for label, text in (("short", "Count from 1 to 100."),
                            ("long", long_prompt(PREFIX_WORDS, cfg.traits.max_model_len, uuid.uuid4().hex))):
            before = await scrape(client)
            timing = await stream_request(client, {"model": cfg.model, "messages": [{"role": "user", "content": text}],
                                            "max_tokens": budget(cfg, SPEC_TOKENS), "temperature": 0, "stream": True,
                                            "stream_options": STREAM_OPTIONS, "ignore_eos": True})
            if not timing.ok:
                return Exercise("speculative", "fail", f"the {label} request failed: {timing.error}",
                                time.perf_counter() - t0)
            row = _acceptance(before, await scrape(client))
            if row is None:
                return Exercise("speculative", "skip" if not cfg.traits.known else "fail",
                                "the server exports no speculative-decoding metrics"
                                + ("" if not cfg.traits.known else f" although {cfg.traits.speculative} is configured"),
                                time.perf_counter() - t0)
            rows[label] = row
    except MetricsError as exc:
        return Exercise("speculative", "skip", f"acceptance is read from /metrics, which is unreadable: {exc}",
                        time.perf_counter() - t0)
    dt = time.perf_counter() - t0
    method = cfg.traits.speculative or "speculative decoding"
    if any(r.get("drafts") == 0 for r in rows.values()):
        return Exercise("speculative", "fail", f"{method} is configured but no drafts were made: the drafter is "
                        "not running (check the log for the drafter's load)", dt, rows)
    short, long = rows["short"], rows["long"]
    line = (f"{method}: acceptance {short['acceptance_rate']:.0%} (short prompt) / {long['acceptance_rate']:.0%} "
            f"(long prompt), mean accepted length {short['mean_accepted_length']:.2f} / "
            f"{long['mean_accepted_length']:.2f} tokens")
    low = [label for label, r in rows.items() if r["acceptance_rate"] < LOW_ACCEPTANCE]
    if low:
        cause = ("at long context, as MTP can collapse there (sgl-project/sglang#30763)" if low == ["long"] else
                 "a drafter for another checkpoint or quantization, or dummy weights, accept little")
        return Exercise("speculative", "warn", f"{line}: under {LOW_ACCEPTANCE:.0%} {cause}", dt, rows)
    return Exercise("speculative", "ok", line, dt, rows)


def _hit_rate(before: Snapshot, after: Snapshot) -> float | None:
    queries, hits = after.delta("prefix_queries", before), after.delta("prefix_hits", before)
    if queries is not None and hits is not None:
        return hits / queries if queries > 0 else 0.0
    return after.latest.get("cache_hit_rate")


def _miss_cause(cfg: ExerciseConfig) -> str:
    t = cfg.traits
    if t.hybrid and (t.backend or "vllm") == "vllm":
        mode = t.cache_mode or "align"
        return (f"the hybrid model got no prefix-cache hits in mamba cache mode {mode!r}: vLLM checkpoints the GDN "
                "state only at block boundaries there (vllm-project/vllm#51250, #42317), so repeated prompts are "
                "recomputed")
    if t.hybrid:
        return (f"the hybrid model got no radix-cache hits (mamba scheduler strategy {t.cache_mode or 'no_buffer'}):"
                f" check {option('mamba_radix_strategy', 'sglang')} extra_buffer")
    return "no prefix-cache hits for a repeated prompt"


async def prefix_cache(client: httpx.AsyncClient, cfg: ExerciseConfig) -> Exercise:
    """The same long prompt twice: the second request's hit rate (from /metrics) and its TTFT against the first."""
    if cfg.traits.prefix_caching is False:
        return Exercise("prefix_cache", "skip", "prefix caching is off ("
                        + " / ".join("--" + name for name in switch_names("prefix_caching", False)) + ")")
    payload = {"model": cfg.model, "max_tokens": 2, "temperature": 0, "stream": True,
               "stream_options": STREAM_OPTIONS, "ignore_eos": True,
               "messages": [{"role": "user", "content": long_prompt(PREFIX_WORDS, cfg.traits.max_model_len,
                                                                    uuid.uuid4().hex)}]}
    t0 = time.perf_counter()
    first = await stream_request(client, payload)
    if not first.ok:
        return Exercise("prefix_cache", "fail", f"the long prompt failed: {first.error}", time.perf_counter() - t0)
    before: Snapshot | None
    try:
        before = await scrape(client)
    except MetricsError:
        before = None
    second = await stream_request(client, payload)
    dt = time.perf_counter() - t0
    if not second.ok:
        return Exercise("prefix_cache", "fail", f"the repeated prompt failed: {second.error}", dt)
    rate: float | None = None
    if before is not None:
        try:
            rate = _hit_rate(before, await scrape(client))
        except server_metrics.MetricsError:
            rate = None
    data: dict[str, Any] = {"prompt_tokens": second.prompt_tokens, "first_ttft_ms": round(first.ttft * 1000, 1),
                            "second_ttft_ms": round(second.ttft * 1000, 1), "hit_rate": rate,
                            "mode": cfg.traits.cache_mode}
    line = (f"{second.prompt_tokens or '?'}-token prompt twice: TTFT {data['first_ttft_ms']:.0f} ms, then "
            f"{data['second_ttft_ms']:.0f} ms")
    if rate is None:
        return Exercise("prefix_cache", "ok", f"{line}; hit rate unknown (no prefix-cache metrics)", dt, data)
    line += f"; the second request hit {rate:.0%} of its prompt in the cache"
    if rate <= 0:
        return Exercise("prefix_cache", "warn", f"{line}: {_miss_cause(cfg)}", dt, data)
    return Exercise("prefix_cache", "ok", line, dt, data)
