"""An OpenAI-compatible completions API over HTTP: listing models, streaming one completion
under a grammar, retries where a request may be repeated, and a clear error for each refusal.

Engines: ``llama.cpp`` (llama-server and llama-cpp-python's server: ``grammar`` and
``cache_prompt`` fields) and ``vllm`` (``structured_outputs.grammar``, ``stream_options``).  The
API key comes from the environment (:data:`API_KEY_VARIABLE`) and is never logged.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx

from .edit import REMOTE_ENGINES, ContextOverflow, DecodeError

API_KEY_VARIABLE = "COPYEDIT_API_KEY"
RETRIES = 3  # attempts after the first, for requests that may be repeated
BACKOFF = 0.5  # seconds before the first retry; doubled each time
_CONTEXT = re.compile(r"context (length|size|window)|maximum context|input tokens", re.IGNORECASE)


class RemoteError(DecodeError):
    """The server could not be reached or did not answer as asked; nothing is applied."""


@dataclass(frozen=True)
class Endpoint:
    """Where the server is: its base URL (``http://host:port/v1``), model name, engine, timeout;
    and whether a program request may run through gens to the next copy (fewer requests, the same
    program) or stops after each op."""

    url: str
    model: str = ""  # empty: the first model the server lists
    engine: str = "llama.cpp"
    timeout: float = 60.0  # seconds without a byte from the server
    api_key: str | None = field(default=None, repr=False)
    gens_per_request: bool = True  # a request runs through gens to the next copy; False: one op each

    def __post_init__(self) -> None:
        if self.engine not in REMOTE_ENGINES:
            raise ValueError(f"the remote engine must be one of {REMOTE_ENGINES}, not {self.engine!r}")
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"the remote URL must start with http:// or https://, not {self.url!r}")


@dataclass
class Answer:
    """One completion: its text, why it stopped, and what the server reported of its prompt."""

    text: str = ""
    finish_reason: str | None = None
    pieces: int = 0  # streamed chunks that carried text
    completion_tokens: int | None = None
    prompt_evaluated: int | None = None  # prompt tokens the server evaluated (not from its cache)
    prompt_cached: int | None = None  # prompt tokens the server took from its cache


class Completions:
    """An OpenAI-compatible completions API: listing models, streaming one completion."""

    def __init__(self, endpoint: Endpoint):
        self.endpoint = endpoint
        self.client = self._connect()

    def _connect(self) -> httpx.Client:
        """A client with a new connection pool (keep-alive connections are reused between ops)."""
        endpoint = self.endpoint
        return httpx.Client(
            base_url=endpoint.url.rstrip("/") + "/",
            headers={"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {},
            timeout=httpx.Timeout(endpoint.timeout, connect=min(endpoint.timeout, 10.0)),
        )

    def close(self) -> None:
        self.client.close()

    def models(self) -> list[str]:
        """The names of the models the server serves (``GET /models``, retried: it is idempotent)."""
        response = self._send(self.client.build_request("GET", "models"), idempotent=True)
        try:
            return [model["id"] for model in response.json()["data"]]
        except (ValueError, KeyError, TypeError) as error:
            raise RemoteError(f"{self.endpoint.url}/models did not list models: {error}") from None

    def stream(
        self,
        prompt: str,
        *,
        grammar: str | None,
        max_tokens: int,
        model: str,
        on_piece: Callable[[Answer], bool],
    ) -> Answer:
        """Complete ``prompt`` greedily under ``grammar``.  ``on_piece`` sees the answer grow and
        returns True once it is complete (or raises): the stream is closed, which cancels the
        generation on the server."""
        body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0, "stream": True}
        if self.endpoint.engine == "llama.cpp":
            body |= {"cache_prompt": True, "repeat_penalty": 1.0}
            if grammar is not None:
                body["grammar"] = grammar
        else:  # vLLM reports a streamed request's usage (and cached tokens) only when asked
            body["stream_options"] = {"include_usage": True}
            if grammar is not None:
                body["structured_outputs"] = {"grammar": grammar}
        request = self.client.build_request("POST", "completions", json=body)
        response = self._send(request, idempotent=False, stream=True)
        answer = Answer()
        try:
            for chunk in _events(response):
                if chunk is None:  # [DONE]
                    break
                _read_chunk(chunk, answer)
                if on_piece(answer):
                    break
            else:  # the stream ended unfinished (llama-cpp-python streams its errors that way)
                self._why_unfinished(body)
        except httpx.TimeoutException:
            raise RemoteError(f"the server sent nothing for {self.endpoint.timeout:g} s") from None
        except httpx.HTTPError as error:
            raise RemoteError(f"the connection to {self.endpoint.url} broke: {error}") from None
        finally:
            response.close()
        return answer

    def _why_unfinished(self, body: dict) -> None:
        """Raise the server's error for a stream that ended unfinished: the same request, not
        streamed and cut to one token, gets it as an HTTP error.  The server may have dropped the
        connection the stream used: the pool starts afresh."""
        self.client.close()
        self.client = self._connect()
        request = self.client.build_request("POST", "completions", json=body | {"stream": False, "max_tokens": 1})
        self._send(request, idempotent=False).close()
        raise RemoteError(f"the server at {self.endpoint.url} ended the stream before the answer was complete")

    def _send(self, request: httpx.Request, *, idempotent: bool, stream: bool = False) -> httpx.Response:
        """Send ``request``; retry with backoff when it never reached the server, or when it is
        idempotent and the server was busy or the connection failed."""
        url = self.endpoint.url
        for attempt in range(RETRIES + 1):
            last = attempt == RETRIES
            try:
                response = self.client.send(request, stream=stream)
            except httpx.ConnectError as error:  # nothing was sent: safe to repeat any request
                if last:
                    raise RemoteError(f"cannot reach the server at {url}: {error}") from None
            except httpx.TimeoutException:
                if last or not idempotent:
                    raise RemoteError(
                        f"the server at {url} did not answer within {self.endpoint.timeout:g} s"
                    ) from None
            except httpx.HTTPError as error:
                if last or not idempotent:
                    raise RemoteError(f"the request to {url} failed: {error}") from None
            else:
                if response.status_code < 400:
                    return response
                if not (idempotent and response.status_code in (429, 502, 503, 504) and not last):
                    raise _http_error(response, url)
                response.close()
            time.sleep(BACKOFF * 2**attempt)
        raise AssertionError("unreachable")


def _events(response: httpx.Response) -> Iterator[dict | None]:
    """The JSON payloads of a server-sent event stream; None for ``[DONE]``, its end."""
    for line in response.iter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            yield None
            return
        try:
            yield json.loads(data)
        except ValueError:
            raise RemoteError(f"the server streamed something that is not JSON: {data[:200]!r}") from None


def _read_chunk(chunk: dict, answer: Answer) -> None:
    """Add one streamed chunk to ``answer``: text, finish reason, token counts, cache use."""
    if "error" in chunk:
        raise RemoteError(f"the server stopped with an error: {_message(chunk)}")
    for choice in chunk.get("choices") or []:
        if choice.get("text"):
            answer.text += choice["text"]
            answer.pieces += 1
        answer.finish_reason = choice.get("finish_reason") or answer.finish_reason
    usage = chunk.get("usage") or {}
    if usage.get("completion_tokens") is not None:
        answer.completion_tokens = usage["completion_tokens"]
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")  # vLLM
    if cached is not None and usage.get("prompt_tokens") is not None:
        answer.prompt_cached, answer.prompt_evaluated = cached, usage["prompt_tokens"] - cached
    timings = chunk.get("timings") or {}  # llama-server
    if timings.get("prompt_n") is not None:
        answer.prompt_evaluated, answer.prompt_cached = timings["prompt_n"], timings.get("cache_n")


def _message(payload: object) -> str:
    """The error message in an OpenAI-style, llama.cpp-style or FastAPI-style error body."""
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            return str(error.get("message") or error.get("detail") or error)
        return str(payload.get("message") or payload.get("detail") or error)
    return str(payload)


def _http_error(response: httpx.Response, url: str) -> DecodeError:
    """A clear error for a refused request: context overflow, no grammar support, key, model."""
    response.read()
    try:
        message = _message(response.json())
    except ValueError:
        message = response.text[:500] or response.reason_phrase
    status = response.status_code
    if status in (400, 413) and _CONTEXT.search(message):
        return ContextOverflow(f"the edit does not fit the server's context: {message}")
    if "grammar" in message.lower():
        return RemoteError(f"the server at {url} rejected the grammar (does it support GBNF grammars?): {message}")
    if status in (401, 403):
        return RemoteError(f"the server at {url} refused the API key (set {API_KEY_VARIABLE}): {message}")
    if status == 404:
        return RemoteError(f"no such endpoint or model at {url}: {message}")
    return RemoteError(f"the server at {url} answered {status}: {message}")
