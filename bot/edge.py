"""The HTTP edge: one aiohttp server for Slack's HTTP mode, Teams, ``/healthz`` and ``/readyz``.

Its port is public, so nothing reaches a handler that could hold memory or a thread for free:
- a body over ``max_body_bytes`` (1 MiB: Slack's and Teams' payloads are a few KiB) is refused
  with 413 from its ``Content-Length`` before a byte of it is read, and a body without one
  stops being read at the limit (aiohttp's ``client_max_size``);
- the body must arrive within ``read_timeout_s`` (408), and a connection that sends no complete
  request within ``idle_timeout_s`` is closed (aiohttp's keep-alive timer runs from the moment
  it connects), so slow clients cost a socket and a coroutine, never a thread;
- a malformed request gets its 4xx and exactly one log line (JSON with GHOST_LOG_FORMAT=json):
  status, method, path, peer and why, never the body; aiohttp's access log is off;
- ``/readyz`` asks :class:`bot.health.Readiness`, which caches and runs at most one check.

The server runs on one asyncio loop (Teams' loop when Teams is configured, so botbuilder's
coroutines stay on the loop they were built on). :class:`EdgeServer` keeps the blocking
``serve_forever`` / ``shutdown`` shape ``ghost serve`` and the tests drive.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from bot.teams.loop import LoopThread

log = logging.getLogger("ghost.edge")

Ready = Callable[[], tuple[bool, str]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class EdgeLimits:
    max_body_bytes: int = 1 << 20
    read_timeout_s: float = 10.0
    idle_timeout_s: float = 15.0
    #: threads for the blocking work of signed requests (bolt's dispatch, the readiness check)
    worker_threads: int = 16
    #: how long a shutdown waits for requests in flight
    shutdown_timeout_s: float = 5.0


class Refused(Exception):
    """A request the edge answers with a 4xx; ``why`` goes to the log, never the body."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status
        self.why = why


def refused(request: web.Request, status: int, why: str) -> web.Response:
    """The 4xx answer and its one log line. The connection is closed after it, so an unread
    body is never drained."""
    log.warning("HTTP %d for %s %s from %s: %s", status, request.method, request.path,
                request.remote or "?", why)
    response = web.Response(status=status, text=f"{_REASONS.get(status, 'refused')}\n",
                            headers={"Connection": "close"})
    response.force_close()
    return response


_REASONS = {400: "bad request", 401: "not authenticated", 403: "forbidden", 404: "not found",
            405: "method not allowed", 408: "request timeout", 411: "length required",
            413: "body too large", 415: "unsupported media type"}


async def read_body(request: web.Request) -> bytes:
    """The request's body, within the edge's size and time limits; raises :class:`Refused`."""
    limits: EdgeLimits = request.app[LIMITS]
    length = request.content_length
    if length is not None and length > limits.max_body_bytes:
        raise Refused(413, f"Content-Length {length} is over the {limits.max_body_bytes}-byte "
                      "limit; nothing was read")
    try:
        async with asyncio.timeout(limits.read_timeout_s):
            return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise Refused(413, f"body over the {limits.max_body_bytes}-byte limit (no "
                      "Content-Length); reading stopped there") from None
    except TimeoutError:
        raise Refused(408, f"body not received within {limits.read_timeout_s:.0f} s") from None


LIMITS: web.AppKey[EdgeLimits] = web.AppKey("limits", EdgeLimits)
EXECUTOR: web.AppKey[ThreadPoolExecutor] = web.AppKey("executor", ThreadPoolExecutor)


@web.middleware
async def _answer_refusals(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refused → its 4xx and one line; aiohttp's own 4xx (404, 405) and those a library raised
    (botbuilder's 401, logged by ``bot.teams.auth``) pass; anything else is one 500 line."""
    try:
        return await handler(request)
    except Refused as exc:
        return refused(request, exc.status, exc.why)
    except web.HTTPException:  # aiohttp's own (404, 405) or a library's, which logged it
        raise
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("HTTP 500 for %s %s: unexpected error", request.method, request.path)
        return web.Response(status=500, text="internal error\n", headers={"Connection": "close"})


def base_app(ready: Ready | None, limits: EdgeLimits | None = None) -> web.Application:
    """The application every edge serves: the limits, ``/healthz`` and ``/readyz``."""
    limits = limits or EdgeLimits()
    app = web.Application(client_max_size=limits.max_body_bytes,
                          middlewares=[_answer_refusals])
    app[LIMITS] = limits
    executor = ThreadPoolExecutor(limits.worker_threads, thread_name_prefix="ghost-edge")
    app[EXECUTOR] = executor

    async def healthz(_request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(request: web.Request) -> web.Response:
        ok = True
        if ready is not None:
            ok = (await asyncio.get_running_loop().run_in_executor(executor, ready))[0]
        return web.Response(status=200 if ok else 503, text="ready" if ok else "not ready")

    async def close_executor(_app: web.Application) -> None:
        executor.shutdown(wait=False, cancel_futures=True)

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.on_cleanup.append(close_executor)
    return app


class _OneLineLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's server logger, made to write what it refuses as one line without a traceback:
    a request that does not parse (not HTTP, a negative Content-Length, an oversized header)
    is answered 400 by aiohttp itself and reported here."""

    def exception(self, msg: object, *args: Any, exc_info: Any = True, **kwargs: Any) -> None:
        error = exc_info if isinstance(exc_info, BaseException) else None
        why = str(error).strip().splitlines()[0] if error is not None and str(error).strip() \
            else type(error).__name__
        self.logger.warning("HTTP 400 for a request that does not parse (%s): %s",
                            str(msg) % args if args else msg, why[:200])

    def debug(self, msg: object, *args: Any, **kwargs: Any) -> None:
        """aiohttp logs bytes that are not HTTP at all (TLS to a plain port, a scanner) at
        debug; they get the same one line."""
        if isinstance(kwargs.get("exc_info"), BaseException):
            self.exception(msg, *args, exc_info=kwargs["exc_info"])
        else:
            self.logger.debug(msg, *args, **kwargs)


class EdgeServer:
    """``app`` served on ``host:port`` (and any ``extra_ports``) on ``loop``; bound when built.

    ``serve_forever`` blocks until ``shutdown`` (any thread), like ``http.server``'s servers:
    ``shutdown`` stops taking connections and lets the requests in flight finish.
    """

    def __init__(self, app: web.Application, host: str, port: int, *,
                 extra_ports: tuple[int, ...] = (), loop: LoopThread | None = None) -> None:
        self._own_loop = loop is None
        self.loop = loop or LoopThread("ghost-edge-loop")
        self._stopped = threading.Event()
        self._closed = False
        limits = app.get(LIMITS) or EdgeLimits()

        async def start() -> web.AppRunner:
            runner = web.AppRunner(app, access_log=None, handle_signals=False,
                                   shutdown_timeout=limits.shutdown_timeout_s,
                                   keepalive_timeout=limits.idle_timeout_s,
                                   max_line_size=8190, max_field_size=8190, max_headers=64,
                                   lingering_time=0.0,
                                   logger=_OneLineLogger(log, {}))
            await runner.setup()
            try:
                for each in (port, *[p for p in extra_ports if p != port]):
                    await web.TCPSite(runner, host, each, reuse_address=True).start()
            except BaseException:
                await runner.cleanup()
                raise
            return runner

        try:
            self.runner = self.loop.run(start())
        except BaseException:
            if self._own_loop:
                self.loop.stop()
            raise
        self.server_address: tuple[str, int] = self.runner.addresses[0][:2]
        self.addresses = [a[:2] for a in self.runner.addresses]

    def serve_forever(self) -> None:
        self._stopped.wait()

    def shutdown(self) -> None:
        """No new connections; requests in flight are answered (within the limits' timeout)."""
        if not self._closed:
            self._closed = True
            try:
                self.loop.run(self.runner.cleanup(), timeout=30)
            finally:
                if self._own_loop:
                    self.loop.stop()
        self._stopped.set()

    def server_close(self) -> None:
        self.shutdown()
