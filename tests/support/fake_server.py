"""A fake OpenAI-compatible server that starts like vLLM or SGLang: it prints their start-up log lines,
then serves /health, /v1/models and /v1/chat/completions (JSON and SSE streams) on 127.0.0.1.

Run as a script it takes a backend command line (`-m MODULE --port N --served-model-name X ...`), so a
shim interpreter can stand in for the backend's python. Behaviour comes from FAKE_SERVER_MODE:
  ok          start, then serve well-formed answers
  die         print a vLLM --max-model-len error and exit 1 during start
  traceback   print a chained Python traceback no catalogue entry names (a weight name missing while
              loading) and exit 1 during start
  fatal       print a fatal error line, then keep running without becoming healthy
  hang        never become healthy (keeps logging nothing)
  slow        never become healthy but keep logging weight-loading progress (a start that needs longer);
              on SIGTERM it logs "Shutting down" and exits
  bad-json    structured output returns text that is not JSON
  think-leak  reasoning arrives as <think> inside content
  engine-dead /health passes, every completion answers HTTP 500 (vLLM's EngineDeadError)
  crash       the first completion logs vLLM's EngineDeadError, answers HTTP 500 and the server exits
  shutdown-noise  like ok, but logs vLLM's EngineDeadError line when stopped with SIGTERM (as vLLM 0.32 does)
  pressure    like ok, but /metrics shows the KV cache near full, a preemption per request and a queue
              that keeps growing
  thinking-off-empty  with enable_thinking false the answer arrives as reasoning_content, content empty
              (vllm-project/vllm#53284)
  tool-in-think  the model writes its tool call inside <think>: it stays in reasoning_content (vllm#39056)
  prefix-miss the prefix cache never hits (a hybrid model in vLLM's align mode, vllm#51250)
Like the real server it follows its command line: with --reasoning-parser, thinking is on unless the request
sets chat_template_kwargs.enable_thinking false, and a short budget (a JSON-schema answer) is all reasoning with
empty content; tool calls are written as Qwen3.5's XML and parsed into tool_calls (streamed as deltas: name
first, then argument pieces) only by --tool-call-parser qwen3_coder / qwen3_xml (other parsers leave the XML in
content; vLLM without --enable-auto-tool-choice answers HTTP 400); images are answered unless
--language-model-only (HTTP 400, vLLM's message); --speculative-config / --speculative-algorithm exports
speculative-decoding metrics (acceptance FAKE_SERVER_SPEC_ACCEPT, default 0.7); the prefix cache (off with
--no-enable-prefix-caching / --disable-radix-cache) hits a prompt seen before, and an uncached prompt pays a
prefill delay per token. FAKE_SERVER_FIRST_BATCH_DELAY=S makes the first batch of each new width (1, 2, 4, 8,
... requests in flight) wait S seconds before its first token, as kernel compilation / autotuning does.
/metrics serves the backend's Prometheus metric names (vllm: or sglang:) measured on the requests it
answered; FAKE_SERVER_NO_METRICS=1 answers 404 there instead.
FAKE_SERVER_CHILD=1 also starts a grandchild process (as vLLM starts EngineCore) to test group cleanup;
FAKE_SERVER_TRACEBACK_ON_TERM=1 makes slow mode print that traceback and exit 1 on SIGTERM;
FAKE_SERVER_IGNORE_TERM=1 makes the server ignore SIGTERM (to test the SIGKILL fallback).
FAKE_SERVER_RECORD_LAG=S records a request's metrics S seconds after its last bytes (a scrape can miss it).
FAKE_SERVER_SAY=LINE logs LINE at start (to plant text, a secret say, in the server log).
With `--nnodes N` (N > 1) it is one node of a multi-node SGLang launch, as torch.distributed's TCP rendezvous
behaves: rank 0 listens on `--dist-init-addr HOST:PORT` and serves HTTP only after the N-1 other ranks connected;
a rank N > 0 (`--node-rank`) connects there (retrying for a minute), serves no HTTP and runs until stopped
(FAKE_SERVER_MODE=die makes it exit 1 instead).
Every process it starts carries CHILD_MARKER on its command line, so a test can find what is left of it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

VLLM_LINES = [
    "(APIServer pid=1) INFO 12-02 15:59:16 [api_utils.py:286] non-default args: {'host': '127.0.0.1'}",
    "(Worker pid=2) INFO 12-02 16:01:52 [cpu_model_runner.py:68] Starting to load model /m...",
    "(Worker pid=2) INFO 12-02 16:01:53 [default_loader.py:501] Loading weights took 0.09 seconds",
    "(Worker pid=2) INFO 12-02 16:01:59 [cpu_worker.py:260] Explicitly set (1.0/12.96) GiB for KV cache on node 0.",
    "(EngineCore pid=3) INFO 12-02 16:01:59 [kv_cache_utils.py:2327] CPU KV cache size: 2,097,152 tokens, "
    "Maximum concurrency for 256 tokens per request: 8192.00x",
    "(EngineCore pid=3) INFO 12-02 16:02:04 [core.py:402] init engine (profile, create kv cache, warmup model) took 5.67 s",
    "(APIServer pid=1) INFO 12-02 16:02:10 [entry.py:140] Starting vLLM server on http://127.0.0.1:{port}",
]
SGLANG_LINES = [
    "[2026-09-09 11:57:01] server_args=ServerArgs(model_path='/m', port={port})",
    "[2026-09-09 11:57:05 TP0] Load weight begin. avail mem=78.50 GB",
    "[2026-09-09 11:57:15 TP0] Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, avail mem=11.2 GB",
    "[2026-09-09 11:57:18 TP0] KV Cache is allocated. #tokens: 2618868, K size: 19.98 GB, V size: 19.98 GB",
    "[2026-09-09 11:57:20 TP0] Capture cuda graph begin. This can take up to several minutes.",
    "[2026-09-09 11:57:30 TP0] Capture cuda graph end. Time elapsed: 10.1 s.",
    "[2026-09-09 11:57:31] The server is fired up and ready to roll!",
]
UNNAMED_TRACEBACK = """\
Traceback (most recent call last):
  File "/usr/lib/python3.12/site-packages/vllm/model_executor/layers/fused_moe/layer.py", line 812, in weight_loader
    expert_data = param.data[expert_id]
                  ~~~~~~~~~~^^^^^^^^^^^
IndexError: index 256 is out of bounds for dimension 0 with size 128

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "/usr/lib/python3.12/site-packages/vllm/model_executor/model_loader/default_loader.py", line 269, in load_weights
    loaded_weights = model.load_weights(self.get_all_weights(model_config, model))
  File "/usr/lib/python3.12/site-packages/vllm/model_executor/models/qwen3_moe.py", line 515, in load_weights
    raise RuntimeError(f"cannot load expert {expert_id} of {name}") from exc
RuntimeError: cannot load expert 256 of model.layers.47.mlp.experts"""
MAX_LEN_ERROR = ("Value error, User-specified max_model_len (999999) is greater than the derived max_model_len "
                 "(max_position_embeddings=256 or model_max_length=None in model's config.json). To allow overriding "
                 "this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must "
                 "be used with extreme caution.")

ENGINE_DEAD = ("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) "
               "for the root cause.")


def arg(argv: list[str], name: str, default: str | None = None) -> str | None:
    return argv[argv.index(name) + 1] if name in argv and argv.index(name) + 1 < len(argv) else default


QWEN35_TOOL_CALL = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
                    "</tool_call>")
XML_TOOL_PARSERS = ("qwen3_coder", "qwen3_xml")
PREFILL_S_PER_TOKEN = 0.0002


def _text_of(body: dict[str, Any]) -> tuple[str, bool]:
    """The request's message text and whether it carries an image part."""
    texts, has_image = [], False
    for m in body.get("messages") or []:
        content = m.get("content")
        if isinstance(content, str):
            texts.append(content)
        for part in content if isinstance(content, list) else []:
            texts.append(part.get("text") or "")
            has_image = has_image or part.get("type") == "image_url"
    return " ".join(texts), has_image


class Metrics:
    """The few server metrics qwen-doctor reads, under vLLM's or SGLang's names."""

    def __init__(self, backend: str, mode: str, speculative: bool = False) -> None:
        self.registry = CollectorRegistry()
        self.mode = mode
        self.lock = threading.Lock()
        self.active = 0
        v = backend == "vllm"
        r = self.registry
        self.ttft = Histogram("vllm:time_to_first_token_seconds" if v else "sglang:time_to_first_token_seconds",
                              "TTFT", registry=r)
        self.itl = Histogram("vllm:inter_token_latency_seconds" if v else "sglang:inter_token_latency_seconds",
                             "ITL", registry=r)
        self.tpot = Histogram("vllm:request_time_per_output_token_seconds", "TPOT", registry=r) if v else None
        self.e2el = Histogram("vllm:e2e_request_latency_seconds" if v else "sglang:e2e_request_latency_seconds",
                              "E2E", registry=r)
        self.queue = Histogram("vllm:request_queue_time_seconds" if v else "sglang:queue_time_seconds", "queue",
                               registry=r)
        self.kv = Gauge("vllm:kv_cache_usage_perc" if v else "sglang:token_usage", "KV usage", registry=r)
        self.running = Gauge("vllm:num_requests_running" if v else "sglang:num_running_reqs", "running", registry=r)
        self.waiting = Gauge("vllm:num_requests_waiting" if v else "sglang:num_queue_reqs", "waiting", registry=r)
        self.preempt = Counter("vllm:num_preemptions" if v else "sglang:num_retracted_requests", "preempted",
                               registry=r)
        self.success = Counter("vllm:request_success", "finished", ["finished_reason"], registry=r) if v else None
        self.prefix_queries = Counter("vllm:prefix_cache_queries", "prefix tokens asked", registry=r) if v else None
        self.prefix_hits = Counter("vllm:prefix_cache_hits", "prefix tokens hit", registry=r) if v else None
        self.hit_rate = None if v else Gauge("sglang:cache_hit_rate", "hit rate", registry=r)
        self.spec: dict[str, Any] = {}
        if speculative and v:
            self.spec = {k: Counter(f"vllm:spec_decode_num_{k}", k, registry=r)
                         for k in ("drafts", "draft_tokens", "accepted_tokens")}
        elif speculative:
            self.spec = {k: Gauge(f"sglang:spec_accept_{k}", k, registry=r) for k in ("length", "rate")}
        self.widths: dict[int, float] = {}

    def cold_wait(self) -> float:
        """Seconds this request waits for the one-time cost of its batch width (FAKE_SERVER_FIRST_BATCH_DELAY)."""
        delay = float(os.environ.get("FAKE_SERVER_FIRST_BATCH_DELAY") or 0)
        if not delay:
            return 0.0
        with self.lock:
            width = 1 << max(self.active - 1, 0).bit_length()
            ready = self.widths.setdefault(width, time.perf_counter() + delay)
        return max(0.0, ready - time.perf_counter())

    def prefix(self, tokens: int, hit: bool) -> None:
        with self.lock:
            if self.prefix_queries is not None:
                self.prefix_queries.inc(tokens)
                self.prefix_hits.inc(tokens if hit else 0)
            if self.hit_rate is not None:
                self.hit_rate.set(1.0 if hit else 0.0)

    def drafted(self, tokens: int) -> None:
        """Speculative decoding over `tokens` output tokens: 3 draft tokens per step, FAKE_SERVER_SPEC_ACCEPT kept."""
        if not self.spec:
            return
        accept = float(os.environ.get("FAKE_SERVER_SPEC_ACCEPT") or 0.7)
        with self.lock:
            if "drafts" in self.spec:
                steps = max(1, tokens // 2)
                self.spec["drafts"].inc(steps)
                self.spec["draft_tokens"].inc(3 * steps)
                self.spec["accepted_tokens"].inc(round(3 * steps * accept))
            else:
                self.spec["length"].set(1 + 3 * accept)
                self.spec["rate"].set(accept)

    def begin(self) -> float:
        with self.lock:
            self.active += 1
            self.running.set(self.active)
            self.kv.set(0.98 if self.mode == "pressure" else min(1.0, 0.01 * self.active))
        return time.perf_counter()

    def end(self, t0: float, ttft: float, tokens: int) -> None:
        e2e = time.perf_counter() - t0
        lag = float(os.environ.get("FAKE_SERVER_RECORD_LAG") or 0)
        if lag:
            threading.Timer(lag, self._record, (e2e, ttft, tokens)).start()
        else:
            self._record(e2e, ttft, tokens)

    def _record(self, e2e: float, ttft: float, tokens: int) -> None:
        with self.lock:
            self.active -= 1
            self.running.set(self.active)
            self.ttft.observe(ttft)
            self.e2el.observe(e2e)
            self.queue.observe(0.0001)
            for _ in range(max(tokens - 1, 0)):
                self.itl.observe((e2e - ttft) / max(tokens - 1, 1))
            if self.tpot is not None and tokens > 1:
                self.tpot.observe((e2e - ttft) / (tokens - 1))
            if self.success is not None:
                self.success.labels("length").inc()
            if self.mode == "pressure":
                self.preempt.inc()
                self.waiting.inc()
            else:
                self.kv.set(0.01 * self.active)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    server_version = "fake-openai"

    def log_message(self, fmt: str, *args: Any) -> None:
        print(f'INFO:     127.0.0.1 - "{self.command} {self.path}" {args[1] if len(args) > 1 else ""}', flush=True)

    def _json(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        key = self.server.cfg.get("api_key")  # type: ignore[attr-defined]
        if key and self.headers.get("Authorization") != f"Bearer {key}":
            self._json(401, {"error": "Unauthorized"})
            return False
        return True

    def do_GET(self) -> None:
        cfg = self.server.cfg  # type: ignore[attr-defined]
        if self.path != "/health" and not self._authorized():
            return
        if self.path == "/health":
            self._json(200, {}) if cfg["ready"] else self._json(503, {"error": "starting"})
        elif self.path == "/metrics" and cfg["ready"] and not os.environ.get("FAKE_SERVER_NO_METRICS"):
            data = generate_latest(cfg["metrics"].registry)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif self.path == "/v1/models" and cfg["ready"]:
            self._json(200, {"object": "list", "data": [{"id": cfg["model"], "object": "model"}]})
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        cfg = self.server.cfg  # type: ignore[attr-defined]
        if not self._authorized():
            return None
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path != "/v1/chat/completions" or not cfg["ready"]:
            return self._json(404, {"error": "not found"})
        if cfg["mode"] in ("engine-dead", "crash"):
            self._json(500, {"error": {"message": "EngineCore encountered an issue. EngineDeadError"}})
            if cfg["mode"] == "crash":
                print(ENGINE_DEAD, flush=True)
                os._exit(1)
            return None
        if body.get("model") != cfg["model"]:
            return self._json(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
        argv = cfg["argv"]
        text, has_image = _text_of(body)
        if has_image and "--language-model-only" in argv:
            return self._json(400, {"error": {"message": "At most 0 image(s) may be provided in one prompt."}})
        if body.get("tools") and cfg["backend"] == "vllm" and "--enable-auto-tool-choice" not in argv:
            return self._json(400, {"error": {"message": '"auto" tool choice requires --enable-auto-tool-choice '
                                                         "and --tool-call-parser to be set"}})
        n = int(body.get("max_tokens") or 16)
        prompt_tokens = max(7, len(text.split()))
        content, reasoning = self._answer(body, cfg, has_image)
        calls = self._tool_calls(body, cfg, content)
        if calls:
            content = ""
        t0 = cfg["metrics"].begin()
        wait = cfg["metrics"].cold_wait() + self._prefill(text, prompt_tokens, cfg)
        cfg["metrics"].drafted(n)
        if body.get("stream"):
            ttft = self._stream(n, body, reasoning, t0, wait, calls, content, prompt_tokens)
            cfg["metrics"].end(t0, ttft, n)
            return None
        time.sleep(wait)
        cfg["metrics"].end(t0, time.perf_counter() - t0, n)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        if calls:
            message["tool_calls"] = calls
        self._json(200, {"id": "c1", "object": "chat.completion", "model": cfg["model"],
                         "choices": [{"index": 0, "message": message,
                                      "finish_reason": "tool_calls" if calls else "length"}],
                         "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n,
                                   "total_tokens": prompt_tokens + n}})

    def _prefill(self, text: str, tokens: int, cfg: dict[str, Any]) -> float:
        """Seconds of prefill: none for a prompt the prefix cache holds, PREFILL_S_PER_TOKEN per token otherwise."""
        argv = cfg["argv"]
        caching = "--no-enable-prefix-caching" not in argv and "--disable-radix-cache" not in argv
        with cfg["metrics"].lock:
            hit = caching and cfg["mode"] != "prefix-miss" and text in cfg["seen"]
            cfg["seen"].add(text)
        cfg["metrics"].prefix(tokens, hit)
        return 0.0 if hit else tokens * PREFILL_S_PER_TOKEN

    def _answer(self, body: dict[str, Any], cfg: dict[str, Any], has_image: bool) -> tuple[str, str | None]:
        thinking = cfg["reasoning"] and (body.get("chat_template_kwargs") or {}).get("enable_thinking", True)
        if body.get("tools"):
            if cfg["mode"] == "tool-in-think":
                return "", "I should call the tool. " + QWEN35_TOOL_CALL
            return QWEN35_TOOL_CALL, ("The user wants the weather." if thinking else None)
        if body.get("response_format", {}).get("type") == "json_schema":
            if thinking:
                return "", "The sky is blue, so the answer is"  # the whole short budget spent thinking
            return ("{\"answer\": tru" if cfg["mode"] == "bad-json" else '{"answer":true,"colour":"blue"}'), None
        if cfg["reasoning"] and not thinking:
            return ("", "Paris") if cfg["mode"] == "thinking-off-empty" else ("Paris", None)
        if has_image:
            return "red", ("The image is a red square." if thinking else None)
        if cfg["reasoning"]:
            if cfg["mode"] == "think-leak":
                return "<think>17 * 3 = 51</think>51", None
            return "51", "17 * 3 = 51"
        return "hello there friend how are", None

    def _tool_calls(self, body: dict[str, Any], cfg: dict[str, Any], content: str) -> list[dict[str, Any]]:
        """The parsed call when the server's parser reads Qwen3.5's XML format."""
        if not body.get("tools") or "<tool_call>" not in content or arg(cfg["argv"], "--tool-call-parser") \
                not in XML_TOOL_PARSERS:
            return []
        return [{"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}]

    def _stream(self, n: int, body: dict[str, Any], reasoning: str | None, t0: float, wait: float = 0.0,
                calls: list[dict[str, Any]] | None = None, content: str = "", prompt_tokens: int = 7) -> float:
        """Stream n tokens 2 ms apart, HTTP/1.1 chunked like uvicorn (one SSE event per chunk); return the TTFT.
        FAKE_SERVER_PAIRS=1 puts two tokens in each event after the first; FAKE_SERVER_BUNCH=k sends k events
        in one write (one socket read for the client, as when it falls behind), then waits k times as long."""
        self.protocol_version = "HTTP/1.1"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        time.sleep(wait)
        options = body.get("stream_options") or {}
        if calls or body.get("tools"):
            return self._stream_tool(calls or [], content, reasoning, t0)
        step = 2 if os.environ.get("FAKE_SERVER_PAIRS") else 1
        bunch = int(os.environ.get("FAKE_SERVER_BUNCH") or 1)
        pending: list[bytes] = []
        ttft = 0.0
        i = 0
        while i < n:
            k = 1 if i == 0 else min(step, n - i)
            chunk: dict[str, Any] = {"choices": [{"index": 0, "delta": {"content": " ".join(f"t{j}" for j in
                                                                                            range(i, i + k)) + " "},
                                                  "finish_reason": None}]}
            i += k
            if options.get("continuous_usage_stats"):
                chunk["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": i,
                                  "total_tokens": prompt_tokens + i}
            pending.append(_chunked(f"data: {json.dumps(chunk)}\n\n"))
            if i == 1 or len(pending) == bunch or i >= n:
                self.wfile.write(b"".join(pending))
                self.wfile.flush()
                ttft = ttft or time.perf_counter() - t0
                time.sleep(0.002 * k * len(pending))
                pending = []
        if options.get("include_usage"):
            usage = {"choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n,
                                              "total_tokens": prompt_tokens + n}}
            self.wfile.write(_chunked(f"data: {json.dumps(usage)}\n\n"))
        self.wfile.write(_chunked("data: [DONE]\n\n") + b"0\r\n\r\n")
        return ttft


    def _stream_tool(self, calls: list[dict[str, Any]], content: str, reasoning: str | None, t0: float) -> float:
        """A streamed tool-call answer: reasoning, then either the call as deltas (id and name, then the
        arguments in pieces) or the unparsed text as content deltas."""
        deltas: list[dict[str, Any]] = []
        if reasoning:
            deltas.append({"reasoning_content": reasoning})
        for call in calls:
            args = call["function"]["arguments"]
            deltas.append({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                           "function": {"name": call["function"]["name"], "arguments": ""}}]})
            deltas += [{"tool_calls": [{"index": 0, "function": {"arguments": args[i:i + 5]}}]}
                       for i in range(0, len(args), 5)]
        deltas += [{"content": content[i:i + 8]} for i in range(0, len(content), 8)]
        ttft = time.perf_counter() - t0
        for i, delta in enumerate(deltas):
            finish = ("tool_calls" if calls else "stop") if i == len(deltas) - 1 else None
            event = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.wfile.write(_chunked(f"data: {json.dumps(event)}\n\n"))
            self.wfile.flush()
        self.wfile.write(_chunked("data: [DONE]\n\n") + b"0\r\n\r\n")
        return ttft


def _chunked(text: str) -> bytes:
    data = text.encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


class _Server(ThreadingHTTPServer):
    """A real server's listen backlog: socketserver's default of 5 refuses part of a 16-stream burst under load."""

    request_queue_size = 128
    daemon_threads = True


def serve(port: int, model: str, mode: str = "ok", reasoning: bool = False,
          host: str = "127.0.0.1", api_key: str | None = None, backend: str = "vllm",
          argv: tuple[str, ...] | list[str] = ()) -> ThreadingHTTPServer:
    """Start the fake API in a background thread (already healthy); the caller shuts it down. `argv` is the
    backend command line it behaves by (parsers, --language-model-only, speculative decoding, prefix caching)."""
    httpd = _Server((host, port), Handler)
    httpd.daemon_threads = True
    speculative = any(a in argv for a in ("--speculative-config", "--speculative-algorithm"))
    httpd.cfg = {"model": model, "mode": mode, "reasoning": reasoning, "ready": True, "backend": backend,
                 "argv": list(argv), "seen": set(), "api_key": api_key,
                 "metrics": Metrics(backend, mode, speculative)}  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


CHILD_MARKER = "qwen-doctor-fake-server-child"


def _dist_addr(argv: list[str]) -> tuple[str, int]:
    host, _, port = (arg(argv, "--dist-init-addr") or "127.0.0.1:20000").rpartition(":")
    return host, int(port)


def _rendezvous(argv: list[str], nnodes: int) -> socket.socket:
    """Rank 0: accept the other ranks on the dist-init address before serving."""
    server = socket.create_server(_dist_addr(argv))
    print(f"fake rank 0: waiting for {nnodes - 1} rank(s) on {arg(argv, '--dist-init-addr')}", flush=True)
    for _ in range(nnodes - 1):
        conn, peer = server.accept()
        print(f"fake rank 0: rank {conn.recv(16).decode().strip()} joined from {peer[0]}", flush=True)
    return server


def _worker_node(argv: list[str], rank: str, mode: str) -> int:
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')} TP{rank}] Init torch distributed begin (fake node rank {rank}).",
          flush=True)
    if mode == "die":
        print("RuntimeError: fake node failed to join the distributed group", flush=True)
        return 1
    deadline = time.monotonic() + 60
    while True:
        try:
            conn = socket.create_connection(_dist_addr(argv), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    conn.sendall(f"{rank}\n".encode())
    print(f"fake node rank {rank}: joined {arg(argv, '--dist-init-addr')}", flush=True)
    while True:
        time.sleep(1)


def _slow_stop(*_: object) -> None:
    """SIGTERM in slow mode: log the shutdown and exit 0, or (FAKE_SERVER_TRACEBACK_ON_TERM=1) die with a
    traceback and exit 1, as a server whose shutdown itself crashes."""
    if os.environ.get("FAKE_SERVER_TRACEBACK_ON_TERM"):
        print(UNNAMED_TRACEBACK, flush=True)
        os._exit(1)
    print("INFO Shutting down", flush=True)
    os._exit(0)


def main(argv: list[str]) -> int:
    mode = os.environ.get("FAKE_SERVER_MODE", "ok")
    module = arg(argv, "-m", "")
    backend = "sglang" if "sglang" in module else "vllm"
    port = int(arg(argv, "--port", "8000"))
    model = arg(argv, "--served-model-name") or arg(argv, "--model") or arg(argv, "--model-path") or "m"
    if os.environ.get("FAKE_SERVER_IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if mode == "shutdown-noise":
        signal.signal(signal.SIGTERM, lambda *_: (print(ENGINE_DEAD, flush=True), os._exit(0)))
    if os.environ.get("FAKE_SERVER_CHILD"):
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", CHILD_MARKER])
    if arg(argv, "--node-rank", "0") != "0":
        return _worker_node(argv, arg(argv, "--node-rank", "0") or "", mode)
    lines = SGLANG_LINES if backend == "sglang" else VLLM_LINES
    if os.environ.get("FAKE_SERVER_SAY"):
        print(os.environ["FAKE_SERVER_SAY"], flush=True)
    for line in lines[:3]:
        print(line.replace("{port}", str(port)), flush=True)
        time.sleep(0.05)
    if mode == "die":
        print("Traceback (most recent call last):", flush=True)
        print(f"pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n  {MAX_LEN_ERROR}",
              flush=True)
        return 1
    if mode == "traceback":
        print(UNNAMED_TRACEBACK, flush=True)
        return 1
    if mode == "fatal":
        print(f"ERROR {MAX_LEN_ERROR}", flush=True)
    if mode in ("fatal", "hang"):
        while True:
            time.sleep(1)
    if mode == "slow":
        signal.signal(signal.SIGTERM, _slow_stop)
        for i in range(10**6):
            print(f"Loading safetensors checkpoint shards: {i % 100}% Completed | {i}/1000", flush=True)
            time.sleep(0.3)
    nnodes = int(arg(argv, "--nnodes", "1") or 1)
    rendezvous = _rendezvous(argv, nnodes) if nnodes > 1 else None  # noqa: F841 (kept open while serving)
    httpd = serve(port, model, mode, reasoning=arg(argv, "--reasoning-parser") is not None,
                  api_key=arg(argv, "--api-key"), backend=backend, argv=argv)
    for line in lines[3:]:
        print(line.replace("{port}", str(port)), flush=True)
    print("INFO:     Application startup complete.", flush=True)
    try:
        while True:
            time.sleep(1)
    finally:
        httpd.shutdown()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
