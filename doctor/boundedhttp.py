"""HTTP clients for servers we do not trust (an engine, a proxy, a package index): every response is bounded in
size and in total time, not only per read.

httpx's timeouts apply to each network operation, so a server that sends one byte every few seconds, or an
endless chunked body, keeps a request alive (and its body growing in memory) forever. The transports here wrap
httpx's own: a response whose body passes `max_bytes` raises `ReplyTooLarge`, one that is not whole within
`seconds` of its request raises `ReplyTooSlow` (the async transport also bounds the wait for the head). Both are
`httpx.HTTPError`s, so every caller that handles a failed request handles these the same way.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Iterator

import httpx

MiB = 1 << 20
REPLY_MAX_BYTES = 16 * MiB


class ReplyTooLarge(httpx.ReadError):
    """A response body larger than the client accepts."""


class ReplyTooSlow(httpx.ReadTimeout):
    """A response not whole within the client's total deadline (a trickle or an endless stream)."""


def _too_slow(request: httpx.Request, seconds: float) -> ReplyTooSlow:
    return ReplyTooSlow(f"the reply was not whole within {seconds:g} s", request=request)


class _Budget:
    """What one response may still take: bytes and seconds, checked at each chunk."""

    def __init__(self, request: httpx.Request, seconds: float, max_bytes: int) -> None:
        self.request, self.seconds, self.max_bytes = request, seconds, max_bytes
        self.deadline = time.monotonic() + seconds
        self.received = 0

    def left_s(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise _too_slow(self.request, self.seconds)
        return left

    def take(self, chunk: bytes) -> bytes:
        self.received += len(chunk)
        if self.received > self.max_bytes:
            raise ReplyTooLarge(f"the reply passed {self.max_bytes // MiB} MiB", request=self.request)
        self.left_s()
        return chunk


class _BoundedStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, budget: _Budget) -> None:
        self.inner, self.budget = inner, budget

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            yield self.budget.take(chunk)

    def close(self) -> None:
        self.inner.close()


class _BoundedAsyncStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, budget: _Budget) -> None:
        self.inner, self.budget = inner, budget

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = self.inner.__aiter__()
        while True:
            try:
                chunk = await asyncio.wait_for(chunks.__anext__(), self.budget.left_s())
            except StopAsyncIteration:
                return
            except asyncio.TimeoutError:
                raise _too_slow(self.budget.request, self.budget.seconds) from None
            yield self.budget.take(chunk)

    async def aclose(self) -> None:
        await self.inner.aclose()


def bounded_body(response: httpx.Response, seconds: float, max_bytes: int = REPLY_MAX_BYTES) -> bytes:
    """The body of a streamed response (`client.stream(...)`), whole within `seconds` from now and `max_bytes`:
    for a client whose transport cannot be replaced (one that takes its proxies from the environment)."""
    budget = _Budget(response.request, seconds, max_bytes)
    return b"".join(budget.take(chunk) for chunk in response.iter_bytes())


def _rebuilt(response: httpx.Response, stream: Any, request: httpx.Request) -> httpx.Response:
    return httpx.Response(status_code=response.status_code, headers=response.headers, stream=stream,
                          extensions=response.extensions, request=request)


class BoundedTransport(httpx.BaseTransport):
    """httpx's transport with each response's body bounded in bytes and total seconds."""

    def __init__(self, seconds: float, max_bytes: int = REPLY_MAX_BYTES, **options: Any) -> None:
        self.inner = httpx.HTTPTransport(**options)
        self.seconds, self.max_bytes = seconds, max_bytes

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        budget = _Budget(request, self.seconds, self.max_bytes)
        response = self.inner.handle_request(request)
        return _rebuilt(response, _BoundedStream(response.stream, budget), request)  # type: ignore[arg-type]

    def close(self) -> None:
        self.inner.close()


class BoundedAsyncTransport(httpx.AsyncBaseTransport):
    """httpx's async transport with each response (head and body) bounded in bytes and total seconds."""

    def __init__(self, seconds: float, max_bytes: int = REPLY_MAX_BYTES, **options: Any) -> None:
        self.inner = httpx.AsyncHTTPTransport(**options)
        self.seconds, self.max_bytes = seconds, max_bytes

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        budget = _Budget(request, self.seconds, self.max_bytes)
        try:
            response = await asyncio.wait_for(self.inner.handle_async_request(request), self.seconds)
        except asyncio.TimeoutError:
            raise _too_slow(request, self.seconds) from None
        return _rebuilt(response, _BoundedAsyncStream(response.stream, budget), request)  # type: ignore[arg-type]

    async def aclose(self) -> None:
        await self.inner.aclose()


def bounded_client(seconds: float, max_bytes: int = REPLY_MAX_BYTES, **kwargs: Any) -> httpx.Client:
    """An httpx.Client whose every response is whole within `seconds` and `max_bytes` (see the module). It takes
    no proxy from the environment (httpx would mount an unbounded transport for it): for one that must, read
    the body with `bounded_body`."""
    transport = BoundedTransport(seconds, max_bytes, limits=kwargs.get("limits", httpx.Limits()), trust_env=False)
    return httpx.Client(transport=transport, timeout=kwargs.pop("timeout", seconds), **{**kwargs, "trust_env": False})


def bounded_async_client(seconds: float, max_bytes: int = REPLY_MAX_BYTES, **kwargs: Any) -> httpx.AsyncClient:
    """An httpx.AsyncClient whose every response is whole within `seconds` and `max_bytes` (see the module),
    without proxies from the environment (as `bounded_client`)."""
    transport = BoundedAsyncTransport(seconds, max_bytes, limits=kwargs.get("limits", httpx.Limits()),
                                      trust_env=False)
    return httpx.AsyncClient(transport=transport, timeout=kwargs.pop("timeout", seconds),
                             **{**kwargs, "trust_env": False})
