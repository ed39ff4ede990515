"""Where the server leaves pygls's defaults, and why: every override of a pygls member in one place.

pygls (2.x) reads stdio with a reader that dies on a huge ``Content-Length`` and goes deaf after a
bad one, answers malformed JSON-RPC by logging it or not at all, and cancels a command's result
future but never its task. The server needs every message answered and a cancel that stops the
model. Where pygls has no public hook, this module relies on a private member, and nowhere else
does: ``pygls`` is pinned in pyproject.toml, and tests/test_protocol.py covers each one.

* ``LanguageServerProtocol._handle_request`` (wrapped: the request's id in :data:`request_id`)
  and ``._handle_cancel_notification`` (wrapped: the request's stop flag set);
* ``._send_data`` and ``._converter`` (an error answer for a message pygls cannot structure),
  ``._shutdown`` (requests after ``shutdown``), ``._request_futures`` (an id still running),
  ``._server`` (the server whose stop flags a cancel sets);
* ``LanguageServer._stop_event`` and ``._server`` (set as pygls's own ``start_io`` and
  ``start_tcp`` set them, for its ``shutdown``).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import threading
from typing import BinaryIO, get_args

import cattrs
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcMethodNotFound,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from .framing import MAX_DEPTH, Message, Unparsed, read_messages, thread_reader

log = logging.getLogger(__name__)
# The id of the request whose handler runs: the command's task inherits it (see CopyeditProtocol).
request_id: contextvars.ContextVar[object] = contextvars.ContextVar("copyedit_request_id", default=None)


class CopyeditProtocol(LanguageServerProtocol):
    """Answers every request, and makes ``$/cancelRequest`` stop a running edit.

    As JSON-RPC and LSP say: a body that does not parse gets ParseError (-32700, id null); a
    message that is not a request object, or has an illegal id, InvalidRequest (-32600); a
    notification sent with an id MethodNotFound (-32601), not applied; params that fail the
    schema or nest too deep InvalidParams (-32602) naming the field; a request reusing a running
    one's id, a second ``initialize`` or one after ``shutdown`` InvalidRequest; one before
    ``initialize`` ServerNotInitialized (-32002).  pygls would log them, show a popup or say nothing.

    pygls runs ``workspace/executeCommand`` as a generator that awaits the command's coroutine as
    a separate task: a cancel only cancels the request's result future (the client gets
    RequestCancelled), never that task.  No public hook exists, so the request's id is kept in a
    context variable the command's task inherits, and the cancel sets that request's stop flag.
    """

    initialize_seen = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reviews: dict[str, list[int] | None] = {}  # hunks taken, by the id of an applyEdit request

    def get_message_type(self, method: str):
        """lsprotocol's params type of ``method`` (pygls caches 128 of these by method name: a
        client sending megabyte-long unknown names would make the cache hold them)."""
        return types.METHOD_TO_TYPES.get(method, (None,))[0]

    def get_result_type(self, method: str):
        return types.METHOD_TO_TYPES.get(method, (None, None))[1]

    def receive(self, item: Message | Unparsed) -> None:
        """One framed message (:mod:`~copyedit_lsp.serve.framing`): structured and handled, or answered
        with the JSON-RPC error that says why not (a notification that cannot be is logged)."""
        if isinstance(item, Unparsed):
            log.warning("%s", item.why)
            self._reply(None, JsonRpcParseError(f"parse error: {item.why}"))
            return
        data = item.data
        refused = _malformed(data)
        if refused is not None:
            self._reply(*refused)
            return
        assert isinstance(data, dict)
        request = "id" in data and "method" in data
        if item.cut:
            what = data.get("method", "a response")[:80]
            error = JsonRpcInvalidParams(f"invalid params of {what}: nested past {MAX_DEPTH} levels")
            if request:
                self._reply(data["id"], error)
            else:
                log.warning("%s (not a request: dropped)", error)
            return
        if request and data["id"] in self._request_futures:
            self._reply(data["id"], JsonRpcInvalidRequest(f"request {str(data['id'])[:40]} is still running"))
            return
        answered = data.get("id")
        if isinstance(answered, str) and answered in self.reviews and isinstance(data.get("result"), dict):
            self.reviews[answered] = _hunks(data["result"].get("hunks"))
        try:
            message = self.structure_message(data)
        except Exception as error:  # pygls raises InvalidParams with the cattrs error as its cause
            why = _schema_error(error)
            if "method" in data and "id" in data:
                self._reply(data["id"], JsonRpcInvalidParams(f"invalid params of {str(data['method'])[:80]}: {why}"))
            else:
                log.warning("a message that fails the schema: %s", why)
            return
        try:
            self.handle_message(message)
        except Exception as error:
            log.exception("failed to handle a %.80s message", data.get("method", "response"))
            if request:
                self._reply(data["id"], JsonRpcInternalError(f"{type(error).__name__}: {str(error)[:200]}"))

    def handle_message(self, message) -> None:
        method = getattr(message, "method", None)
        if method is not None and hasattr(message, "id"):  # a request
            refused = self._refusal(method)
            if refused is not None:
                self._reply(message.id, refused)
                return
            self.initialize_seen = self.initialize_seen or method == types.INITIALIZE
        elif method is not None and not self.initialize_seen and method != types.EXIT:
            return  # a notification before initialize is dropped
        super().handle_message(message)

    def _refusal(self, method: str) -> JsonRpcException | None:
        """The error a request for ``method`` gets in the server's present state, or None."""
        if self._shutdown:
            return JsonRpcInvalidRequest("the server is shutting down")
        if method == types.INITIALIZE and self.initialize_seen:
            return JsonRpcInvalidRequest("the server is already initialized")
        if method != types.INITIALIZE and not self.initialize_seen:
            return JsonRpcServerNotInitialized("the server is not initialized: send initialize first")
        return None

    def _reply(self, msg_id, error: JsonRpcException) -> None:
        """Answer ``msg_id`` (null where it is not a legal id: JSON-RPC keeps the member) with ``error``."""
        answer = msg_id if _legal_id(msg_id) else None
        self._send_data(
            {"jsonrpc": "2.0", "id": answer, "error": self._converter.unstructure(error.to_response_error())}
        )

    def _handle_request(self, msg_id, method_name, params):
        token = request_id.set(msg_id)
        try:
            return super()._handle_request(msg_id, method_name, params)
        finally:
            request_id.reset(token)

    def _handle_cancel_notification(self, msg_id):
        stop = self._server.stops.get(msg_id)
        if stop is not None:
            stop.set()
        super()._handle_cancel_notification(msg_id)


def _legal_id(msg_id: object) -> bool:
    """Whether ``msg_id`` is an LSP request id (an integer or a string)."""
    return isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)


NOTIFICATION_TYPES = frozenset(get_args(types.NOTIFICATIONS))


def _malformed(data: object) -> tuple[object, JsonRpcException] | None:
    """The id to answer and the error, for a message JSON-RPC or LSP refuses before its params are
    read: not a request, notification or response object, a bad id, version or method, a
    notification sent as a request."""
    if not isinstance(data, dict):
        return None, JsonRpcInvalidRequest(f"a message must be a JSON object, not {type(data).__name__}")
    msg_id = data.get("id")  # legal or absent below: _reply answers an absent one with null
    if "id" in data and not _legal_id(msg_id):
        return None, JsonRpcInvalidRequest(f"an id must be an integer or a string, not {type(msg_id).__name__}")
    method = data.get("method")
    if method is None and "id" in data and ("result" in data or "error" in data):
        return None  # a response to one of the server's requests
    if data.get("jsonrpc") != "2.0":
        return msg_id, JsonRpcInvalidRequest('a message must say "jsonrpc": "2.0"')
    if not isinstance(method, str):
        return msg_id, JsonRpcInvalidRequest("a request or notification must name its method as a string")
    if "id" in data and types.METHOD_TO_TYPES.get(method, (None,))[0] in NOTIFICATION_TYPES:
        return msg_id, JsonRpcMethodNotFound(f"{method} is a notification, not a request: sent with an id, not applied")
    return None


def _hunks(value: object) -> list[int] | None:
    """The hunks a client says it took (1-based indices of the edit's text edits), if it says."""
    if isinstance(value, list) and all(isinstance(h, int) and not isinstance(h, bool) for h in value):
        return value[:10_000]
    return None


def _schema_error(error: Exception) -> str:
    """A short account of why a message failed the schema (the fields cattrs names)."""
    cause = error.__cause__
    if isinstance(cause, cattrs.BaseValidationError):
        return "; ".join(cattrs.transform_error(cause))[:300]
    return str(cause or error)[:300] or type(error).__name__


class FramedServer(LanguageServer):
    """A pygls server that reads through :mod:`~copyedit_lsp.serve.framing` on stdio and TCP, and keeps
    the stop flag of each running request by id (set by a ``$/cancelRequest``).

    It sets pygls's private ``_stop_event`` (which ``shutdown`` sets, and the reader watches) and
    ``_server`` (the asyncio server ``shutdown`` closes), as pygls's own ``start_io``/``start_tcp`` do."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.stops: dict[object, threading.Event] = {}

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve over stdio, reading through :mod:`~copyedit_lsp.serve.framing` (pygls's reader dies on a
        huge Content-Length and goes deaf after a bad one)."""
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

        async def serve() -> None:
            await read_messages(thread_reader(stdin or sys.stdin.buffer), self.protocol.receive, self._stop_event, log)

        try:
            asyncio.run(serve())
        except BrokenPipeError:
            log.error("the client closed the connection")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def start_tcp(self, host: str, port: int) -> None:
        """Serve a client over TCP, reading through :mod:`~copyedit_lsp.serve.framing` as on stdio; the
        server stops when the client disconnects (as pygls's does)."""
        self._stop_event = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)  # type: ignore[arg-type]  # pygls writes bytes to it, as its own start_tcp does
            await read_messages(lambda: reader.read(1 << 16), self.protocol.receive, self._stop_event, log)
            self.shutdown()

        async def serve() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            async with self._server:
                await self._server.serve_forever()

        try:
            asyncio.run(serve())
        except (asyncio.CancelledError, KeyboardInterrupt):
            pass
