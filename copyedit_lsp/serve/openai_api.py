"""A local OpenAI-compatible apply endpoint (``copyedit serve``) for the tools that already call an
apply model over HTTP (Continue's apply role, avante.nvim's fast apply).

``POST /v1/chat/completions`` takes an apply request in the form Morph documents: the last user
message holds ``<code>`` (the file) and ``<update>`` (the change an assistant wrote), an
``<instruction>`` optional; the model name is free.  The change is merged by the apply program
(:func:`~copyedit_lsp.decode.fast_apply.apply_change`, the checks of ``copyedit apply --change``) and the
merged file is the assistant's message, whole or streamed (``stream: true``).  Streaming starts once
the result has passed its checks, so a change that cannot be applied gets an error and no content.
Nothing is ever written; one apply runs at a time, in order; a client that hangs up stops its apply.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import re
import threading
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..core.change import ChangeError, read_change
from ..core.resolver import split_lines
from ..core.scope import language_of_code
from ..decode.edit import DecodeError, EditStats
from .config import Settings
from .region import check_size
from .worker import Worker

API_KEY_VARIABLE = "COPYEDIT_SERVE_API_KEY"  # the key requests must bear, if set
MODEL_NAME = "copyedit-apply"  # what /v1/models lists; a request may name any model
_REQUEST = re.compile(
    r"\s*(?:<instruction>(?P<instruction>.*?)</instruction>\s*)?"
    r"<code>\n?(?P<code>.*)</code>\s*<update>\n?(?P<update>.*)</update>\s*",
    re.DOTALL,
)


@dataclass(frozen=True)
class ServeOptions:
    """Where ``copyedit serve`` listens, the key it requires (None: none) and what it takes."""

    host: str = "127.0.0.1"
    port: int = 8787
    api_key: str | None = None
    max_request_bytes: int = 4_000_000
    shortcut: bool = True  # no model where the anchors or the structure place the whole change (fast_apply)


class RequestError(Exception):
    """A request answered with an OpenAI-style error: the HTTP status, a code and the message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code

    def response(self) -> JSONResponse:
        kind = {401: "authentication_error", 404: "not_found_error"}.get(self.status, "invalid_request_error")
        error = {"message": str(self), "type": kind, "param": None, "code": self.code}
        return JSONResponse({"error": error}, status_code=self.status)


@dataclass(frozen=True)
class ApplyRequest:
    """What a chat completion request asks: the file, the change, what it is for, how to answer."""

    code: str
    update: str
    instruction: str
    model: str
    stream: bool
    include_usage: bool


def parse_request(body: Any) -> ApplyRequest:
    """The apply request a chat completion body holds; :class:`RequestError` (400) if it holds none."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise RequestError(400, "invalid_request", "the body must be a JSON object with a messages list")
    users = [message for message in body["messages"] if isinstance(message, dict) and message.get("role") == "user"]
    if not users:
        raise RequestError(
            400, "invalid_request", "no user message: it must hold <code>...</code> <update>...</update>"
        )
    content = users[-1].get("content")
    if isinstance(content, list):  # content parts: the text ones, in order
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    matched = _REQUEST.fullmatch(content) if isinstance(content, str) else None
    if matched is None:
        raise RequestError(
            400,
            "invalid_request",
            "the last user message must be <instruction>...</instruction> (optional) <code>the file</code> "
            "<update>the change</update>",
        )
    options = body.get("stream_options")
    return ApplyRequest(
        code=matched["code"],
        update=matched["update"],
        instruction=(matched["instruction"] or "").strip(),
        model=str(body.get("model") or MODEL_NAME),
        stream=body.get("stream") is True,
        include_usage=isinstance(options, dict) and options.get("include_usage") is True,
    )


class ApplyService:
    """The endpoint's state: the settings, the worker that owns the model, the options."""

    def __init__(self, settings: Settings, worker: Worker, options: ServeOptions) -> None:
        self.settings, self.worker, self.options = settings, worker, options

    def authorize(self, request: Request) -> None:
        """:class:`RequestError` (401) unless the request bears the configured key (if one is)."""
        if self.options.api_key is None:
            return
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), self.options.api_key.encode()):
            raise RequestError(401, "invalid_api_key", "a valid API key is required (Authorization: Bearer KEY)")

    async def body(self, request: Request) -> Any:
        """The request's JSON, read no further than the size limit (413 past it)."""
        limit = self.options.max_request_bytes
        too_large = RequestError(413, "request_too_large", f"the request is larger than {limit} bytes")
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            raise too_large
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > limit:
                raise too_large
        try:
            return json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise RequestError(400, "invalid_json", f"the body is not UTF-8 JSON ({error})") from None

    async def merged(self, asked: ApplyRequest, request: Request) -> tuple[str, EditStats]:
        """The change merged into the code and checked as ``copyedit apply --change`` checks it; a
        :class:`RequestError` says why not.  A client that hangs up stops the apply."""
        try:
            for text, what in ((asked.code, "code"), (asked.update, "update")):
                check_size(text, self.settings.max_file_bytes, what)
            change = read_change(asked.update)
        except ValueError as error:  # ChangeError too: markers only, an empty change
            raise RequestError(400, "invalid_change", f"{error}; nothing was applied") from None
        language = await asyncio.to_thread(language_of_code, asked.code)  # parses: off the event loop
        stop = threading.Event()
        watcher = asyncio.create_task(_watch_disconnect(request, stop))
        try:
            applied = await self.worker.apply(
                asked.code, change, self.settings, language=language or "",
                instruction=asked.instruction, partial=False, shortcut=self.options.shortcut, stop=stop,
            )  # fmt: skip
        except ChangeError as error:  # another language's code, a block found nowhere or twice
            raise RequestError(400, "invalid_change", f"{error}; nothing was applied") from None
        except DecodeError as error:
            raise RequestError(400, "model_error", f"{error}; nothing was applied") from None
        finally:
            watcher.cancel()
        result = applied.result
        refusal = await asyncio.to_thread(applied.refusal, syntax_guard=self.settings.syntax_guard)
        if refusal is not None:
            raise RequestError(400, refusal.code, f"{refusal.message}; nothing was applied")
        return result.text, result.stats

    async def chat_completions(self, request: Request) -> Response:
        """``POST /v1/chat/completions``: the merged file as the assistant's message."""
        try:
            self.authorize(request)
            asked = parse_request(await self.body(request))
            text, stats = await self.merged(asked, request)
        except RequestError as error:
            return error.response()
        answer = _Answer(f"chatcmpl-{uuid.uuid4().hex}", int(time.time()), asked.model, _usage(stats))
        if asked.stream:
            return StreamingResponse(answer.events(text, asked.include_usage), media_type="text/event-stream")
        return JSONResponse(answer.completion(text))

    async def models(self, request: Request) -> Response:
        """``GET /v1/models``: the one model, for clients that list them first."""
        try:
            self.authorize(request)
        except RequestError as error:
            return error.response()
        model = {"id": MODEL_NAME, "object": "model", "created": 0, "owned_by": "copyedit-lsp"}
        return JSONResponse({"object": "list", "data": [model]})


async def _watch_disconnect(request: Request, stop: threading.Event) -> None:
    """Set ``stop`` when the client hangs up (checked twice a second)."""
    while not await request.is_disconnected():
        await asyncio.sleep(0.5)
    stop.set()


def _usage(stats: EditStats) -> dict[str, int]:
    """OpenAI's usage counts of an apply: the prompt's tokens, and the output's (chosen, forced by
    the grammar and spliced: every token that entered the model's cache as output; 0 where the
    deterministic merge answered alone)."""
    prompt = stats.prefill_tokens + stats.prefix_reused_tokens
    completion = stats.chosen_tokens + stats.forced_tokens + stats.spliced_tokens
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@dataclass(frozen=True)
class _Answer:
    """One completion's identity and usage, written whole or as server-sent events."""

    id: str
    created: int
    model: str
    usage: dict[str, int]

    def completion(self, text: str) -> dict[str, Any]:
        message = {"role": "assistant", "content": text}
        choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
        return self._object("chat.completion") | {"choices": [choice], "usage": self.usage}

    async def events(self, text: str, include_usage: bool) -> AsyncIterator[str]:
        """The text as chunks of whole lines, then the finish (and the usage, if asked), then [DONE]."""
        deltas = [{"role": "assistant", "content": ""}] + [{"content": line} for line in split_lines(text)]
        for delta in deltas:
            yield self._event([{"index": 0, "delta": delta, "finish_reason": None, "logprobs": None}])
        yield self._event([{"index": 0, "delta": {}, "finish_reason": "stop", "logprobs": None}])
        if include_usage:
            yield self._event([], usage=self.usage)
        yield "data: [DONE]\n\n"

    def _event(self, choices: list[dict[str, Any]], **extra: Any) -> str:
        chunk = self._object("chat.completion.chunk") | {"choices": choices} | extra
        return f"data: {json.dumps(chunk)}\n\n"

    def _object(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}


def build_app(service: ApplyService) -> Starlette:
    """The HTTP application: the two routes, under ``/v1``."""
    return Starlette(
        routes=[
            Route("/v1/chat/completions", service.chat_completions, methods=["POST"]),
            Route("/v1/models", service.models, methods=["GET"]),
        ]
    )


def serve(settings: Settings, options: ServeOptions) -> int:
    """Load the model, then answer until interrupted; 2 if the model cannot be loaded."""
    import sys

    import uvicorn

    worker, loaded = Worker(), list[Exception | None]()
    worker.load(settings, on_done=loaded.append).result()
    if error := next(iter(loaded), None):
        print(f"copyedit serve: the model could not be loaded: {error}", file=sys.stderr)
        return 2
    if options.host not in ("127.0.0.1", "localhost", "::1") and options.api_key is None:
        print(f"copyedit serve: listening on {options.host} without an API key", file=sys.stderr)
    app = build_app(ApplyService(settings, worker, options))
    print(f"copyedit serve: {worker.device}", file=sys.stderr)
    print(f"copyedit serve: http://{options.host}:{options.port}/v1 (apply requests)", file=sys.stderr, flush=True)
    try:
        uvicorn.run(app, host=options.host, port=options.port, log_level="warning")
    finally:
        worker.shutdown()
    return 0
