"""Tool calls (non-streamed and streamed, thinking on) and answers with thinking off: the two things Qwen3.5
users report broken most.

Qwen3.5 writes a call as XML, `<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>`
(the Qwen3-Coder format). The server's tool-call parser turns it into `tool_calls`; the right one is
`qwen3_coder` (vLLM recipe `--enable-auto-tool-choice --tool-call-parser qwen3_coder`; vLLM 0.32 registers
`qwen3_xml` as the same parser, vllm/tool_parsers/__init__.py; SGLang cookbook `--tool-call-parser qwen3_coder`).
`hermes` / `qwen3_json` expect JSON inside <tool_call> and leave Qwen3.5's XML in content. vLLM 0.19 can lose a
call the model writes inside <think> (vllm-project/vllm#39056); streamed calls broke in some releases
(vllm-project/vllm#39598, #40861). With `enable_thinking: false` some releases return the answer as reasoning
with empty content (vllm-project/vllm#53284, sgl-project/sglang#20789).
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from doctor.deploy.exercise import Exercise, ExerciseConfig, http_error, message_of, reasoning_of, budget
from doctor.deployment.table import option
from doctor.safeio import reply_json

QWEN35_TOOL_PARSERS = {"vllm": ("qwen3_coder", "qwen3_xml"), "sglang": ("qwen3_coder",)}
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TOOL_PROMPT = "What is the weather in Paris right now? Call the get_weather tool."
TOOL_MAX_TOKENS = 1024  # thinking is on: room to think, then call
MARKUP = ("<tool_call>", "<function=")
NO_PARSER_HINTS = ("enable-auto-tool-choice", "tool-call-parser", "tool_call_parser")


def _tool_request(cfg: ExerciseConfig, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": cfg.model, "messages": [{"role": "user", "content": TOOL_PROMPT}],
                            "tools": [WEATHER_TOOL], "tool_choice": "auto", "max_tokens": budget(cfg, TOOL_MAX_TOKENS),
                            "temperature": 0}
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    return body


def _wrong_parser(cfg: ExerciseConfig) -> str:
    """Why a call stayed in content, naming the parser the server runs and the one the release needs."""
    parser = cfg.traits.tool_parser
    wanted = QWEN35_TOOL_PARSERS.get(cfg.traits.backend or "vllm", ("qwen3_coder",))
    if parser in wanted:
        return (f"the call stayed in content although the parser is {parser}: this release's {parser} path is "
                "broken for Qwen3.5 (vllm-project/vllm#39056, #40861); try the other Qwen3 XML parser or upgrade")
    named = f"the tool-call parser {parser}" if parser else "the server's tool-call parser"
    return (f"{named} did not parse Qwen3.5's XML call and left it in content: use "
            f"{option('tool_call_parser')} {wanted[0]} (Qwen3.5 writes <function=...> XML; hermes / qwen3_json expect JSON)")


def _skip_without_parser(name: str, cfg: ExerciseConfig) -> Exercise | None:
    if cfg.traits.known and not cfg.traits.tool_parser:
        return Exercise(name, "skip", "the profile enables no tool-call parser "
                        f"({option('auto_tool_choice')} {option('tool_call_parser')} qwen3_coder)")
    return None


def _refused(name: str, r: httpx.Response, dt: float, cfg: ExerciseConfig) -> Exercise:
    if r.status_code == 400 and any(h in r.text for h in NO_PARSER_HINTS) and not cfg.traits.known:
        return Exercise(name, "skip", "the server has no tool-call parser (it was started without "
                        f"{option('auto_tool_choice')} {option('tool_call_parser')})", dt)
    return Exercise(name, "fail", http_error(r), dt)


def judge_call(name: str, calls: list[dict[str, Any]], content: str, thought: str, finish: Any,
               cfg: ExerciseConfig, dt: float) -> Exercise:
    """The verdict on what came back: one parsed get_weather call with JSON arguments naming a city."""
    data = {"tool_calls": calls[:4], "content": content[:300], "finish_reason": finish,
            "parser": cfg.traits.tool_parser}
    if calls:
        fn = calls[0].get("function") or {}
        raw = fn.get("arguments") or ""
        try:
            args = reply_json(raw)
        except ValueError:
            return Exercise(name, "fail", f"the call's arguments are not JSON ({raw[:120]!r}): the parser "
                            "assembled them wrongly" + (" while streaming (vllm-project/vllm#40861)"
                                                        if name == "tools_stream" else ""), dt, data)
        if fn.get("name") != "get_weather" or not isinstance(args, dict):
            return Exercise(name, "fail", f"called {fn.get('name')!r} with {raw[:120]}, not get_weather "
                            "with an object", dt, data)
        return Exercise(name, "ok", f"get_weather({json.dumps(args)}) arrived in tool_calls "
                        f"(finish_reason {finish})", dt, data)
    if any(m in content for m in MARKUP):
        return Exercise(name, "fail", _wrong_parser(cfg), dt, data)
    if any(m in thought for m in MARKUP):
        return Exercise(name, "fail", "the call was written inside <think> and stayed in reasoning_content: "
                        "lost to the client (vllm-project/vllm#39056)", dt, data)
    return Exercise(name, "warn", f"the model answered without calling the tool (finish_reason {finish}): "
                    "no call to judge the parser by (dummy weights, or the budget ran out while thinking)", dt, data)


async def tool_call(client: httpx.AsyncClient, cfg: ExerciseConfig) -> Exercise:
    """A non-streamed request with one tool and tool_choice auto, thinking on: the call arrives in tool_calls."""
    skipped = _skip_without_parser("tools", cfg)
    if skipped is not None:
        return skipped
    t0 = time.perf_counter()
    r = await client.post("/v1/chat/completions", json=_tool_request(cfg, stream=False))
    dt = time.perf_counter() - t0
    if r.status_code != 200:
        return _refused("tools", r, dt, cfg)
    body = reply_json(r.content)
    msg = message_of(body)
    finish = (body.get("choices") or [{}])[0].get("finish_reason")
    return judge_call("tools", list(msg.get("tool_calls") or []), msg.get("content") or "", reasoning_of(msg),
                      finish, cfg, dt)


def _merge_delta(calls: dict[int, dict[str, Any]], delta_calls: list[dict[str, Any]]) -> None:
    """Fold streamed tool-call deltas (OpenAI: the first carries id and name, later ones argument pieces)."""
    for part in delta_calls:
        call = calls.setdefault(int(part.get("index") or 0), {"function": {"name": None, "arguments": ""}})
        fn = part.get("function") or {}
        if fn.get("name"):
            call["function"]["name"] = fn["name"]
        call["function"]["arguments"] += fn.get("arguments") or ""
        if part.get("id"):
            call["id"] = part["id"]


async def tool_call_stream(client: httpx.AsyncClient, cfg: ExerciseConfig) -> Exercise:
    """The same request streamed: the deltas assemble into one call whose arguments are JSON."""
    skipped = _skip_without_parser("tools_stream", cfg)
    if skipped is not None:
        return skipped
    t0 = time.perf_counter()
    calls: dict[int, dict[str, Any]] = {}
    content, thought, finish = [], [], None
    async with client.stream("POST", "/v1/chat/completions", json=_tool_request(cfg, stream=True)) as r:
        if r.status_code != 200:
            await r.aread()
            return _refused("tools_stream", r, time.perf_counter() - t0, cfg)
        async for line in r.aiter_lines():
            if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                continue
            event = reply_json(line[5:].strip())
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                content.append(delta.get("content") or "")
                thought.append(delta.get("reasoning_content") or delta.get("reasoning") or "")
                _merge_delta(calls, delta.get("tool_calls") or [])
                finish = choice.get("finish_reason") or finish
    return judge_call("tools_stream", [calls[i] for i in sorted(calls)], "".join(content), "".join(thought),
                      finish, cfg, time.perf_counter() - t0)


async def thinking_off(client: httpx.AsyncClient, cfg: ExerciseConfig) -> Exercise:
    """`chat_template_kwargs.enable_thinking: false`: the answer is in content, and no reasoning comes back."""
    t0 = time.perf_counter()
    r = await client.post("/v1/chat/completions", json={
        "model": cfg.model, "messages": [{"role": "user", "content": "Name the capital of France in one word."}],
        "max_tokens": 64, "temperature": 0, "chat_template_kwargs": {"enable_thinking": False}})
    dt = time.perf_counter() - t0
    if r.status_code != 200:
        return Exercise("thinking_off", "fail", http_error(r), dt)
    body = reply_json(r.content)
    msg = message_of(body)
    content, thought = (msg.get("content") or "").strip(), reasoning_of(msg).strip()
    tokens = int((body.get("usage") or {}).get("completion_tokens") or 0)
    data = {"content": content[:300], "reasoning_content": thought[:300], "completion_tokens": tokens}
    if not content and thought:
        return Exercise("thinking_off", "fail", "with thinking off the answer arrived as reasoning_content and "
                        "content is empty: the reasoning parser treats a thinking-off answer as thinking "
                        "(vllm-project/vllm#53284, sgl-project/sglang#20789); upgrade the engine, or parse "
                        "reasoning_content as the answer until then", dt, data)
    if not content and tokens:
        return Exercise("thinking_off", "warn", f"with thinking off {tokens} tokens came back as no text at all "
                        "(special tokens or whitespace only: random weights, or a chat-template problem)", dt, data)
    if not content:
        return Exercise("thinking_off", "fail", "with thinking off the answer is empty (no tokens, no content, no "
                        "reasoning)", dt, data)
    if "</think>" in content or "<think>" in content:
        return Exercise("thinking_off", "fail", "thinking markup in content with thinking off: the chat template "
                        "did not switch thinking off (enable_thinking ignored)", dt, data)
    if thought:
        return Exercise("thinking_off", "warn", f"content {content[:60]!r} but also {len(thought)} characters of "
                        "reasoning with thinking off: enable_thinking was not honoured", dt, data)
    return Exercise("thinking_off", "ok", f"answer {content[:60]!r} in content, no reasoning", dt, data)
