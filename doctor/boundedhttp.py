"""HTTP clients for servers we do not trust (an engine, a proxy, a package index): every response is bounded in
size and in total time, not only per read.

httpx's timeouts apply to each network operation, so a server that sends one byte every few seconds, or an
endless chunked body, keeps a request alive (and its body growing in memory) forever. The transports here wrap
httpx's own: a response whose body passes `max_bytes` raises `ReplyTooLarge`, one that is not whole within
`seconds` of its request raises `ReplyTooSlow`. Both are `httpx.HTTPError`s, so every caller that handles a
failed request handles these the same way. The head is bounded too: the async transport waits for it with
`asyncio.wait_for`; the sync one reads every byte of its socket through `_DeadlineBackend` (httpcore's network
backend, public API), whose reads never wait past the request's deadline, so a head sent one byte at a time (a
slowloris server) ends at the deadline as a body does. A compressed body is inflated here, piece by piece, and the
byte bound counts what it inflates to: a gzip bomb (16 MiB that inflate to 16 GiB) meets the bound after 16 MiB
of output, never whole in memory. The clients ask for gzip or deflate only, and a reply in another encoding is
refused (`httpx.DecodingError`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import zlib
from typing import Any, AsyncIterator, Iterable, Iterator

import httpcore
import httpx

MiB = 1 << 20
REPLY_MAX_BYTES = 16 * MiB
ACCEPTED_ENCODINGS = "gzip, deflate"
_PIECE = 256 * 1024  # the most one inflate step outputs


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

    def late(self) -> None:
        """ReplyTooSlow when a timeout came at the deadline (a socket wait cut to what was left ends at it)."""
        if time.monotonic() >= self.deadline - 0.05:
            raise _too_slow(self.request, self.seconds) from None

    def take(self, chunk: bytes) -> bytes:
        self.received += len(chunk)
        if self.received > self.max_bytes:
            raise ReplyTooLarge(f"the reply passed {self.max_bytes // MiB} MiB", request=self.request)
        self.left_s()
        return chunk


class _Inflater:
    """A gzip or deflate body inflated in pieces of at most _PIECE bytes (see the module); identity passes."""

    def __init__(self, encoding: str, request: httpx.Request) -> None:
        self.request = request
        self.raw_fallback = encoding == "deflate"  # servers send zlib-wrapped or raw deflate, as httpx reads both
        if encoding in ("gzip", "x-gzip"):
            self.inflater: Any = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self.inflater = zlib.decompressobj()
        else:
            raise httpx.DecodingError(f"the reply's content encoding {encoding[:40]!r} is not one the client "
                                      f"accepts ({ACCEPTED_ENCODINGS})", request=request)

    def feed(self, data: bytes) -> Iterator[bytes]:
        while data:
            try:
                piece = self.inflater.decompress(data, _PIECE)
            except zlib.error as exc:
                if not self.raw_fallback:
                    raise httpx.DecodingError(f"the reply's compressed body is corrupt ({exc})",
                                              request=self.request) from None
                self.raw_fallback, self.inflater = False, zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            self.raw_fallback = False
            data = self.inflater.unconsumed_tail
            if piece:
                yield piece
            elif not data:
                return

    def flush(self) -> bytes:
        return self.inflater.flush()


def _inflater(response: httpx.Response, request: httpx.Request) -> _Inflater | None:
    """What decodes the response's body (None: it is not compressed); the response's own decoding is off."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return None
    return _Inflater(encoding, request)


def _decoded(chunk: bytes, inflater: _Inflater | None, budget: "_Budget") -> Iterator[bytes]:
    if inflater is None:
        yield budget.take(chunk)
        return
    for piece in inflater.feed(chunk):
        yield budget.take(piece)


class _Deadline(threading.local):
    """The monotonic time by which the request this thread is reading must be whole (None: no request)."""

    at: float | None = None

    @contextlib.contextmanager
    def until(self, at: float) -> Iterator[None]:
        self.at = at
        try:
            yield
        finally:
            self.at = None

    def bound(self, timeout: float | None) -> float | None:
        """httpcore's per-operation timeout, cut to what is left before the deadline."""
        if self.at is None:
            return timeout
        left = self.at - time.monotonic()
        if left <= 0:
            raise httpcore.ReadTimeout("the request's deadline has passed")
        return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose reads and writes wait at most until the current request's deadline."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: _Deadline) -> None:
        self.inner, self.deadline = inner, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, self.deadline.bound(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, self.deadline.bound(timeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        tls = self.inner.start_tls(ssl_context, server_hostname, self.deadline.bound(timeout))
        return _DeadlineStream(tls, self.deadline)

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend with every stream it opens bounded by `deadline` (see `_DeadlineStream`)."""

    def __init__(self, inner: httpcore.NetworkBackend, deadline: _Deadline) -> None:
        self.inner, self.deadline = inner, deadline

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        stream = self.inner.connect_tcp(host, port, self.deadline.bound(timeout), local_address, socket_options)
        return _DeadlineStream(stream, self.deadline)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        stream = self.inner.connect_unix_socket(path, self.deadline.bound(timeout), socket_options)
        return _DeadlineStream(stream, self.deadline)

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class _BoundedStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, budget: _Budget, deadline: _Deadline,
                 inflater: _Inflater | None) -> None:
        self.inner, self.budget, self.deadline, self.inflater = inner, budget, deadline, inflater

    def __iter__(self) -> Iterator[bytes]:
        chunks = iter(self.inner)
        while True:
            try:
                with self.deadline.until(self.budget.deadline):
                    chunk = next(chunks)
            except StopIteration:
                break
            except httpx.TimeoutException:
                self.budget.late()
                raise
            yield from _decoded(chunk, self.inflater, self.budget)
        if self.inflater is not None:
            yield self.budget.take(self.inflater.flush())

    def close(self) -> None:
        self.inner.close()


class _BoundedAsyncStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, budget: _Budget, inflater: _Inflater | None) -> None:
        self.inner, self.budget, self.inflater = inner, budget, inflater

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = self.inner.__aiter__()
        while True:
            try:
                chunk = await asyncio.wait_for(chunks.__anext__(), self.budget.left_s())
            except StopAsyncIteration:
                break
            except asyncio.TimeoutError:
                raise _too_slow(self.budget.request, self.budget.seconds) from None
            for piece in _decoded(chunk, self.inflater, self.budget):
                yield piece
        if self.inflater is not None:
            yield self.budget.take(self.inflater.flush())

    async def aclose(self) -> None:
        await self.inner.aclose()


def bounded_body(response: httpx.Response, seconds: float, max_bytes: int = REPLY_MAX_BYTES) -> bytes:
    """The body of a streamed response (`client.stream(...)`), whole within `seconds` from now and `max_bytes`:
    for a client whose transport cannot be replaced (one that takes its proxies from the environment)."""
    budget = _Budget(response.request, seconds, max_bytes)
    return b"".join(budget.take(chunk) for chunk in response.iter_bytes())


def _rebuilt(response: httpx.Response, stream: Any, request: httpx.Request, inflated: bool) -> httpx.Response:
    """The response over the bounded stream; one whose body that stream inflates loses its encoding headers
    (httpx would inflate it again, unbounded)."""
    headers = response.headers
    if inflated:
        headers = httpx.Headers([(k, v) for k, v in headers.multi_items()
                                 if k.lower() not in ("content-encoding", "content-length")])
    return httpx.Response(status_code=response.status_code, headers=headers, stream=stream,
                          extensions=response.extensions, request=request)


class BoundedTransport(httpx.BaseTransport):
    """httpx's transport with each response (head and body) bounded in bytes and total seconds."""

    def __init__(self, seconds: float, max_bytes: int = REPLY_MAX_BYTES, **options: Any) -> None:
        self.inner = httpx.HTTPTransport(**options)
        self.seconds, self.max_bytes = seconds, max_bytes
        self.deadline = _Deadline()
        pool = self.inner._pool  # httpx passes no network backend through; its pool takes one (httpcore API)
        pool._network_backend = _DeadlineBackend(pool._network_backend, self.deadline)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        budget = _Budget(request, self.seconds, self.max_bytes)
        try:
            with self.deadline.until(budget.deadline):
                response = self.inner.handle_request(request)
        except httpx.TimeoutException:
            budget.late()
            raise
        try:
            inflater = _inflater(response, request)
        except httpx.DecodingError:
            response.close()
            raise
        stream = _BoundedStream(response.stream, budget, self.deadline, inflater)  # type: ignore[arg-type]
        return _rebuilt(response, stream, request, inflater is not None)

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
        try:
            inflater = _inflater(response, request)
        except httpx.DecodingError:
            await response.aclose()
            raise
        stream = _BoundedAsyncStream(response.stream, budget, inflater)  # type: ignore[arg-type]
        return _rebuilt(response, stream, request, inflater is not None)

    async def aclose(self) -> None:
        await self.inner.aclose()


def bounded_client(seconds: float, max_bytes: int = REPLY_MAX_BYTES, **kwargs: Any) -> httpx.Client:
    """An httpx.Client whose every response is whole within `seconds` and `max_bytes` (see the module). It takes
    no proxy from the environment (httpx would mount an unbounded transport for it): for one that must, read
    the body with `bounded_body`."""
    transport = BoundedTransport(seconds, max_bytes, limits=kwargs.get("limits", httpx.Limits()), trust_env=False)
    return httpx.Client(transport=transport, timeout=kwargs.pop("timeout", seconds),
                        **{**kwargs, "headers": _accepting(kwargs.get("headers")), "trust_env": False})


def bounded_async_client(seconds: float, max_bytes: int = REPLY_MAX_BYTES, **kwargs: Any) -> httpx.AsyncClient:
    """An httpx.AsyncClient whose every response is whole within `seconds` and `max_bytes` (see the module),
    without proxies from the environment (as `bounded_client`)."""
    transport = BoundedAsyncTransport(seconds, max_bytes, limits=kwargs.get("limits", httpx.Limits()),
                                      trust_env=False)
    return httpx.AsyncClient(transport=transport, timeout=kwargs.pop("timeout", seconds),
                             **{**kwargs, "headers": _accepting(kwargs.get("headers")), "trust_env": False})


def _accepting(headers: Any) -> httpx.Headers:
    """The caller's headers, asking for the encodings the transports inflate (httpx would also ask for br / zstd
    where their libraries are installed)."""
    out = httpx.Headers(headers)
    out.setdefault("Accept-Encoding", ACCEPTED_ENCODINGS)
    return out
