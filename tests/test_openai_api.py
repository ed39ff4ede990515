"""``copyedit serve``, the OpenAI-compatible apply endpoint: the real server process with the
tests' 0.5B (tests/mechanism.py) and its shipped apply selector, driven by the ``openai`` package."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import openai
import pytest
from engines import free_port
from mechanism import MODEL
from texts import STATS, VARIANCE_MERGED, VARIANCE_SNIPPET

from copyedit_lsp.core.scope import language_of_code
from copyedit_lsp.serve.openai_api import API_KEY_VARIABLE, RequestError, parse_request

COPYEDIT = Path(sys.executable).with_name("copyedit")
KEY = "test-key"


def apply_message(code: str, update: str, instruction: str = "") -> list[dict]:
    """The chat messages of an apply request in Morph's form."""
    asked = f"<instruction>{instruction}</instruction>\n" if instruction else ""
    return [{"role": "user", "content": f"{asked}<code>{code}</code>\n<update>{update}</update>"}]


def test_a_request_is_read_in_morphs_form_or_refused_with_why():
    asked = parse_request(
        {"model": "morph-v3-fast", "stream": True, "messages": apply_message("x = 1\n", "x = 2\n", " set x ")}
    )
    assert (asked.code, asked.update, asked.instruction, asked.model, asked.stream) == (
        "x = 1\n",
        "x = 2\n",
        "set x",
        "morph-v3-fast",
        True,
    )
    parts = [{"role": "user", "content": [{"type": "text", "text": "<code>\na\n</code><update>b</update>"}]}]
    assert parse_request({"messages": parts}).code == "a\n"  # the line break after a tag is framing
    for body, message in (
        ([], "a JSON object with a messages list"),
        ({"messages": [{"role": "system", "content": "x"}]}, "no user message"),
        ({"messages": [{"role": "user", "content": "<code>x</code>"}]}, "<update>the change</update>"),
    ):
        with pytest.raises(RequestError, match=message) as refused:
            parse_request(body)
        assert refused.value.status == 400


def test_the_language_of_code_is_told_by_its_parse():
    assert language_of_code(STATS) == "python"
    assert language_of_code("function f(a) {\n  return a + 1;\n}\n") == "javascript"
    assert language_of_code("function f(a: number): number {\n  return a;\n}\n") == "typescript"
    assert language_of_code("x = 1\n") is None  # Python and JavaScript alike


@contextmanager
def serving(*options: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``copyedit serve`` on the tests' 0.5B with ``options`` on a free port, until the block ends; its base URL."""
    port = free_port()
    command = [str(COPYEDIT), "serve", "--port", str(port), "--threads", "2", "--model", MODEL, *options]
    server = subprocess.Popen(command, env=os.environ | (env or {}), stderr=subprocess.PIPE, text=True, bufsize=1)
    assert server.stderr is not None
    for line in server.stderr:  # the model loads first; the address is said when it listens
        if line.startswith("copyedit serve: http://"):
            break
    else:
        pytest.fail(f"copyedit serve ended ({server.wait()}) before it listened")
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def endpoint(small_model_path):
    """``copyedit serve`` with the 0.5B, the key required."""
    with serving("--max-request-bytes", "100000", env={API_KEY_VARIABLE: KEY}) as url:
        yield url


@pytest.mark.model
@pytest.mark.server
def test_the_endpoint_merges_a_snippet_whole_and_streamed(endpoint):
    """The same merged file as the assistant's message and as the concatenated stream, with the
    usage counted, through the ``openai`` client: the snippet's definition placed by the code's
    structure, no model token spent."""
    client = openai.OpenAI(base_url=endpoint, api_key=KEY, max_retries=0)
    assert [model.id for model in client.models.list()] == ["copyedit-apply"]
    messages = apply_message(STATS, VARIANCE_SNIPPET)
    answer = client.chat.completions.create(model="morph-v3-fast", messages=messages)
    assert answer.choices[0].message.content == VARIANCE_MERGED and answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None and (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (0, 0)
    stream = client.chat.completions.create(
        model="morph-v3-fast", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices) == VARIANCE_MERGED
    assert chunks[-1].usage == answer.usage


@pytest.mark.model
@pytest.mark.server
def test_the_endpoint_answers_bad_requests_with_an_error_and_nothing_else(endpoint):
    """A block found nowhere, markers only, a change too large, no key: an OpenAI error each (the
    client raises it), no content; the server still answers after them."""
    client = openai.OpenAI(base_url=endpoint, api_key=KEY, max_retries=0)
    nowhere = "<<<<<<< SEARCH\n    return missing\n=======\n    return 0\n>>>>>>> REPLACE\n"
    for update, message in (
        (nowhere, "block 1 ('return missing'): matches nowhere in the file; nothing was applied"),
        ("# ... existing code ...\n", "nothing was applied"),
    ):
        for stream in (False, True):  # streamed or not: the error, before any chunk
            with pytest.raises(openai.BadRequestError, match=re.escape(message)):
                client.chat.completions.create(model="m", messages=apply_message(STATS, update), stream=stream)
    with pytest.raises(openai.APIStatusError, match="larger than 100000 bytes") as too_large:
        client.chat.completions.create(model="m", messages=apply_message(STATS, "x = 1\n" * 20_000))
    assert too_large.value.status_code == 413
    keyless = openai.OpenAI(base_url=endpoint, api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        keyless.chat.completions.create(model="m", messages=apply_message(STATS, VARIANCE_SNIPPET))
    with pytest.raises(openai.AuthenticationError):
        keyless.models.list()
    assert [model.id for model in client.models.list()] == ["copyedit-apply"]
