"""The remote backend by configuration (the CLI and the language server against llama-cpp-python's
own completions server, tests/engines.py) and its failures against a stand-in server; the parity
suite over the engines is tests/test_engines.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import openai
import pytest
import pytest_lsp
from engines import free_port, start_engine
from mechanism import MODEL
from pytest_lsp import ClientServerConfig, LanguageClient
from test_openai_api import apply_message, serving
from test_server import as_dict, ended, open_document, run_edit, start
from texts import STATS, VARIANCE_SNIPPET

from copyedit_lsp.core.change import read_change
from copyedit_lsp.core.grammar import gen_rest_grammar
from copyedit_lsp.core.program import ChangeCopy, Copy, Gen, Program
from copyedit_lsp.decode import completions as completions_api
from copyedit_lsp.decode.completions import Endpoint, RemoteError
from copyedit_lsp.decode.decoder import Decoder
from copyedit_lsp.decode.edit import CUTS, EditOptions
from copyedit_lsp.decode.llama_model import LlamaModel
from copyedit_lsp.decode.remote import RemoteDecoder
from copyedit_lsp.decode.session import ModelSession
from copyedit_lsp.serve.config import Settings, updated
from copyedit_lsp.serve.textedits import apply_lsp_edits
from copyedit_lsp.serve.worker import Worker, endpoint

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def llama_server(small_model_path, tmp_path_factory):
    """llama-cpp-python's own completions server, without an API key (tests/engines.py)."""
    server = start_engine(
        "llama-cpp-python", small_model_path, tmp_path_factory.mktemp("server") / "server.log", api_key=None
    )
    yield server
    server.stop()


@pytest.fixture(scope="module")
def local_decoder(small_model_path):
    decoder = Decoder(ModelSession(LlamaModel(small_model_path, n_ctx=4096, n_threads=2)))
    yield decoder
    decoder.close()


def test_apply_and_bench_edits_run_remotely_by_configuration(llama_server, tmp_path):
    path = tmp_path / "mean.py"
    path.write_text("def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "copyedit_lsp.cli.main",
            "apply",
            str(path),
            "-i",
            "Fix the bug in mean.",
            "--backend",
            "remote",
            "--remote-url",
            llama_server.url,
            "--mode",
            "program",
            "--no-fallback",  # the remote program itself, whatever it changes
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 6), done.stderr  # 6: the program changed nothing, said and not offered
    out = json.loads(done.stdout)
    assert out["program"].startswith("<program>") and out["stats"]["requests"] >= 2
    assert (out["text"] == path.read_text()) == (done.returncode == 6)
    assert path.read_text() == "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n"  # apply writes only with --write
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "copyedit_lsp.cli.main",
            "bench",
            "edits",
            "humanevalfix-python",
            "--limit",
            "2",
            "--modes",
            "remote-forced",
            "--model",
            MODEL,  # the served model, as the manifest records it
            "--remote-url",
            llama_server.url,
            "--out",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["sets"]["humanevalfix-python"]["summary"]["remote-forced"]
    assert summary["exact"] == 2 and summary["parse_rate"] == 1.0
    manifest = json.loads((tmp_path / "edits.manifest.json").read_text())
    assert manifest["backend"] == "remote" and manifest["selector"] is None and "--remote-url" in manifest["command"]


def test_a_change_is_applied_through_the_remote_backend(llama_server, local_decoder, tmp_path):
    """``copyedit apply --change --backend remote --no-shortcut`` (structure would place it without a
    model): the server runs no apply selector, so the merge is a rewrite given the change, the local
    rewrite's text; checked as a local apply is."""
    path, change_path = tmp_path / "stats.py", tmp_path / "change.py"
    path.write_text(STATS)
    change_path.write_text(VARIANCE_SNIPPET)
    command = [sys.executable, "-m", "copyedit_lsp.cli.main", "apply", str(path), "--change", str(change_path)]
    command += ["--backend", "remote", "--remote-url", llama_server.url, "--mode", "program"]
    done = subprocess.run([*command, "--no-shortcut", "--json"], capture_output=True, text=True, timeout=300)
    assert "local model" not in done.stderr and done.returncode in (0, 4, 5), done.stderr
    out = json.loads(done.stdout)
    assert out["stats"]["fallback"] == "selector" and out["stats"]["requests"] == 1
    local = local_decoder.apply(STATS, read_change(VARIANCE_SNIPPET), EditOptions(mode="rewrite", language="python"))
    assert out["text"] == local.text
    assert path.read_text() == STATS


def test_the_openai_endpoint_applies_through_the_remote_backend(llama_server, local_decoder):
    """``copyedit serve --backend remote`` (the endpoint in front of an engine): a search/replace
    block the merge could place, run through the model anyway, answered by the engine's rewrite
    given the change, the local rewrite's text, to the ``openai`` client."""
    fixed = STATS.replace("total / len(values) - 1", "total / len(values)")  # nothing else to fix
    old, new = "for v in values) / len(values)", "for v in values) / (len(values) - 1)"
    line = "    return sum((v - m) ** 2 {}\n"
    block = f"<<<<<<< SEARCH\n{line.format(old)}=======\n{line.format(new)}>>>>>>> REPLACE\n"
    with serving("--backend", "remote", "--remote-url", llama_server.url, "--no-shortcut") as url:
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0)
        answer = client.chat.completions.create(model="any", messages=apply_message(fixed, block))
    local = local_decoder.apply(fixed, read_change(block), EditOptions(mode="rewrite", language="python"))
    assert answer.choices[0].message.content == local.text == fixed.replace(old, new)
    assert answer.usage is not None and answer.usage.completion_tokens > 0


SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "copyedit_lsp.serve.server"])


@pytest_lsp.fixture(config=SERVER)
async def remote_client(lsp_client: LanguageClient, llama_server):
    await start(lsp_client, "visual-studio-code", {"backend": "remote", "remoteUrl": llama_server.url})
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_the_language_server_edits_through_the_remote_backend(remote_client, local_decoder):
    """The server's result is the remote decoder's edit of mean(), which is the local decoder's
    (the same base model, the copy check off), applied as a versioned edit if it changes the text."""
    uri = "file:///tmp/stats.py"
    text = Path(__file__).parents[1].joinpath("examples", "stats.py").read_text()
    mean = "".join(text.splitlines(keepends=True)[:6])  # the edit's scope: the function under the cursor
    here = local_decoder.edit(mean, "Fix the bug in mean.", EditOptions(language="python", copy_check=0.0))
    expected = here.text + text[len(mean) :]
    open_document(remote_client, uri, text, version=3)
    cursor = {"line": 5, "character": 8}  # in mean()
    result = await run_edit(
        remote_client, {"uri": uri, "range": {"start": cursor, "end": cursor}, "instruction": "Fix the bug in mean."}
    )
    assert result["stats"]["requests"] >= 2, result
    assert result["text"] == expected and result["applied"] is True, result.get("reason")
    if expected != text:
        (params,) = remote_client.applied
        (change,) = params.edit.document_changes
        assert change.text_document.version == 3
        assert apply_lsp_edits(text, change.edits) == expected
    else:  # the model changed nothing: nothing reaches the client
        assert result["edits"] == 0 and remote_client.applied == []


# Plumbing: a stand-in HTTP server for failures a real server does not produce on demand.


class FakeServer:
    """Answers with canned responses per path; counts requests.  A status of None drops the
    connection mid-answer: headers that promise more than the body, the body, then nothing."""

    def __init__(self, answers: dict[tuple[str, str], list[tuple[int, bytes, float]]], port: int = 0):
        self.answers = answers
        self.requests: list[tuple[str, str, dict]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _answer(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                fake.requests.append((method, self.path, dict(self.headers), self.rfile.read(length)))
                queue = fake.answers[(method, self.path)]
                status, body, delay = queue.pop(0) if len(queue) > 1 else queue[0]
                time.sleep(delay)
                if status is None:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Content-Length", str(len(body) + 1000))
                    self.end_headers()
                    self.wfile.write(body)
                    self.close_connection = True
                    return
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except BrokenPipeError:  # the client gave up waiting
                    pass

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


MODELS = (200, json.dumps({"data": [{"id": "m"}]}).encode(), 0.0)


def completing(answers: list[bytes]) -> FakeServer:
    """A server that lists the model and answers each completion request with the next of ``answers``."""
    return FakeServer({("GET", "/v1/models"): [MODELS], ("POST", "/v1/completions"): [(200, a, 0.0) for a in answers]})


def sse(*texts: str) -> bytes:
    chunks = [json.dumps({"choices": [{"text": t, "finish_reason": None}]}) for t in texts]
    return "".join(f"data: {c}\n\n" for c in [*chunks, "[DONE]"]).encode()


@pytest.fixture
def fast_retries(monkeypatch):
    monkeypatch.setattr(completions_api, "BACKOFF", 0.01)


@pytest.mark.parametrize(
    "answers, error",
    [
        ({("POST", "/v1/completions"): [(200, sse("def f():\n", "    pass\n"), 0.0)]}, "ignored the grammar"),
        (
            {("POST", "/v1/completions"): [(400, b'{"error": {"message": "invalid grammar: parse error"}}', 0.0)]},
            "rejected the grammar",
        ),
        ({("POST", "/v1/completions"): [(401, b'{"error": {"message": "Invalid API key"}}', 0.0)]}, "COPYEDIT_API_KEY"),
        ({("POST", "/v1/completions"): [(200, sse("<gen>\n"), 2.0)]}, "did not answer within"),
    ],
)
def test_server_failures_are_clear_errors(answers, error, monkeypatch, fast_retries):
    monkeypatch.setenv(completions_api.API_KEY_VARIABLE, "secret-key-123")
    fake = FakeServer({("GET", "/v1/models"): [MODELS], **answers})
    try:
        decoder = RemoteDecoder.connect(Endpoint(fake.url, timeout=0.5))
        with pytest.raises(RemoteError, match=error) as raised:
            decoder.edit("x = 1\n", "Change x.")
        assert "secret-key-123" not in str(raised.value) and "secret-key-123" not in repr(decoder.completions.endpoint)
        assert fake.requests[-1][2]["Authorization"] == "Bearer secret-key-123"
        assert [r[:2] for r in fake.requests].count(("POST", "/v1/completions")) == 1  # a completion is never retried
    finally:
        fake.close()


def test_a_gen_that_changes_nothing_is_asked_for_more_lines():
    """The server ends a gen that only repeats line 2: the decoder asks it for the rest of that gen
    under a grammar that wants one more line, and the gen that then rewrites line 3 stands in for
    lines 2-3 (the program is complete)."""
    answers = [sse('<copy lines="1-1"/>\n'), sse("<gen>\nb = 2\n</gen>\n"), sse("c = 30\n</gen>\n")]
    fake = completing(answers)
    try:
        decoder = RemoteDecoder.connect(Endpoint(fake.url))
        result = decoder.edit("a = 1\nb = 2\nc = 3\n", "Make c ten times larger.")
        assert result.text == "a = 1\nb = 2\nc = 30\n"
        assert result.program == Program((Copy(1, 1), Gen("b = 2\nc = 30\n")))
        bodies = [json.loads(r[3]) for r in fake.requests if r[:2] == ("POST", "/v1/completions")]
        assert len(bodies) == 3 and bodies[2]["grammar"] == gen_rest_grammar()
        assert bodies[2]["prompt"] == bodies[1]["prompt"] + "<gen>\nb = 2\n"
    finally:
        fake.close()


def test_a_request_runs_through_gens_to_the_next_copy():
    """The server may write a gen and the copy after it in one answer: both are taken, and the
    next request's prompt holds the copied lines after the tag."""
    answers = [sse('<copy lines="1-1"/>\n'), sse("<gen>\nb = 20\n</gen>\n", '<copy lines="3-3"/>\n'), sse("</program>")]
    fake = completing(answers)
    try:
        decoder = RemoteDecoder.connect(Endpoint(fake.url))
        result = decoder.edit("a = 1\nb = 2\nc = 3\n", "Make b ten times larger.")
        assert result.program == Program((Copy(1, 1), Gen("b = 20\n"), Copy(3, 3)))
        assert result.text == "a = 1\nb = 20\nc = 3\n" and result.stats.requests == 3
        bodies = [json.loads(r[3]) for r in fake.requests if r[:2] == ("POST", "/v1/completions")]
        assert bodies[1]["grammar"].startswith("root ::= gen+ (copy | last-gen")
        assert bodies[2]["prompt"] == bodies[1]["prompt"] + '<gen>\nb = 20\n</gen>\n<copy lines="3-3"/>\nc = 3\n'
    finally:
        fake.close()


def test_an_apply_program_copies_the_file_and_the_change_through_the_prompt():
    """A remote apply program copies lines of the file and of the change: each copy's lines follow
    its tag in the next request's prompt, and each request's grammar admits change copies only
    forward through the change and never over an elision marker; a copy over one is refused."""
    change = read_change("# ... existing code ...\nb = 20\n# ... existing code ...\n", "snippet")
    answers = [sse('<copy lines="1-1"/>\n'), sse('<copy change="2-2"/>\n'), sse('<copy lines="3-3"/>\n')]
    fake = completing([*answers, sse("</program>"), sse('<copy change="1-2"/>\n')])
    try:
        decoder = RemoteDecoder.connect(Endpoint(fake.url))
        result = decoder.apply("a = 1\nb = 2\nc = 3\n", change, EditOptions(fallback=False))
        assert result.program == Program((Copy(1, 1), ChangeCopy(2, 2), Copy(3, 3)))
        assert result.text == "a = 1\nb = 20\nc = 3\n" and result.stats.requests == 4
        bodies = [json.loads(r[3]) for r in fake.requests if r[:2] == ("POST", "/v1/completions")]
        assert bodies[2]["prompt"] == bodies[1]["prompt"] + '<copy change="2-2"/>\nb = 20\n'
        assert 'k ::= "2" k2\n' in bodies[1]["grammar"]  # line 2 is the one change line no marker
        assert "change-copy" not in bodies[2]["grammar"].split("\n")[0]  # nothing of the change is left
        with pytest.raises(RemoteError, match="ignored the grammar"):
            decoder.apply("a = 1\n", change, EditOptions(fallback=False))
    finally:
        fake.close()


def test_a_copy_drafted_before_the_line_a_gen_reached_is_asked_again():
    """A gen that rewrites line 2 and reproduces line 3 moves the next copy's first line to 4: a
    copy of line 3 the server wrote after it is not taken, and the next request asks again."""
    source = "alpha = 1\nbeta = alpha * 2\ngamma = beta * 3\ndelta = gamma * 4\n"
    answers = [
        sse('<copy lines="1-1"/>\n'),
        sse("<gen>\nBETA = alpha * 2\ngamma = beta * 3\n</gen>\n", '<copy lines="3-4"/>\n'),
        sse('<copy lines="4-4"/>\n'),
        sse("</program>"),
    ]
    fake = completing(answers)
    try:
        decoder = RemoteDecoder.connect(Endpoint(fake.url))
        result = decoder.edit(source, "Rename beta to BETA on its line.")
        assert result.program == Program((Copy(1, 1), Gen("BETA = alpha * 2\ngamma = beta * 3\n"), Copy(4, 4)))
        bodies = [json.loads(r[3]) for r in fake.requests if r[:2] == ("POST", "/v1/completions")]
        assert len(bodies) == 4
        assert bodies[2]["prompt"] == bodies[1]["prompt"] + "<gen>\nBETA = alpha * 2\ngamma = beta * 3\n</gen>\n"
        assert 'c ::= "4" c4' in bodies[2]["grammar"]  # a copy may start at line 4 only
    finally:
        fake.close()


def test_only_idempotent_requests_are_retried(fast_retries):
    busy = (503, b'{"error": {"message": "loading"}}', 0.0)
    fake = FakeServer({("GET", "/v1/models"): [busy, busy, MODELS], ("POST", "/v1/completions"): [busy]})
    try:
        decoder = RemoteDecoder.connect(Endpoint(fake.url))
        assert decoder.model == "m" and len(fake.requests) == 3
        with pytest.raises(RemoteError, match="503"):
            decoder.edit("x = 1\n", "Change x.")
        assert len(fake.requests) == 4
    finally:
        fake.close()


def test_an_unreachable_server_is_a_clear_error(fast_retries):
    with pytest.raises(RemoteError, match="cannot reach the server"):
        RemoteDecoder.connect(Endpoint(f"http://127.0.0.1:{free_port()}/v1"))


async def test_the_worker_connects_again_once_the_server_is_up(fast_retries):
    port = free_port()
    remote = {"backend": "remote", "mode": "program", "remoteUrl": f"http://127.0.0.1:{port}/v1", "fallback": False}
    settings = updated(Settings(), remote)
    worker = Worker()
    try:
        worker.load(settings).result()
        with pytest.raises(RemoteError, match="cannot reach"):
            await worker.edit("x = 1\n", "Keep it.", settings, language="python", stop=threading.Event())
        answers = [(200, sse('<copy lines="1-1"/>\n'), 0.0), (200, sse("</program>"), 0.0)]
        fake = FakeServer({("GET", "/v1/models"): [MODELS], ("POST", "/v1/completions"): answers}, port=port)
        try:
            result = await worker.edit("x = 1\n", "Keep it.", settings, language="python", stop=threading.Event())
            assert result.program == Program((Copy(1, 1),)) and result.text == "x = 1\n"
        finally:
            fake.close()
    finally:
        worker.shutdown()


def test_remote_settings_are_checked():
    remote = {"backend": "remote", "mode": "program", "remoteUrl": "http://gpu:8000/v1", "remoteEngine": "vllm"}
    settings = updated(Settings(), remote)
    assert endpoint(settings) == Endpoint("http://gpu:8000/v1", "", "vllm", 60.0)
    assert settings.model_keys != updated(settings, {"remoteModel": "other"}).model_keys
    for bad, message in [
        ({"backend": "cloud"}, "backend"),
        ({"backend": "remote", "remoteUrl": "gpu:8000"}, "http"),
        ({"backend": "remote", "remoteEngine": "tgi"}, "engine"),
        ({"backend": "remote", "mode": "lookup"}, "lookup"),
    ]:
        with pytest.raises(ValueError, match=message):
            updated(Settings(), bad)


def test_the_remote_backend_runs_without_llama_cpp_python():
    """The remote backend, its settings and its prompts import nothing of llama.cpp: in a Python
    where ``import llama_cpp`` fails, an edit runs against a server and its prompt is the one the
    server would be sent with llama-cpp-python installed."""
    copy, end = sse('<copy lines="1-1"/>\n'), sse("</program>")
    fake = FakeServer(
        {("GET", "/v1/models"): [MODELS], ("POST", "/v1/completions"): [(200, copy, 0.0), (200, end, 0.0)]}
    )
    script = (
        "import json, sys\n"
        "sys.modules['llama_cpp'] = None  # import llama_cpp raises ImportError\n"
        "from copyedit_lsp.serve.config import Settings\n"
        "from copyedit_lsp.serve.worker import open_editor\n"
        "editor = open_editor(Settings(backend='remote', remote_url=sys.argv[1]))\n"
        "result = editor.edit('x = 1\\ny = 2\\n', 'Keep the first line.')\n"
        "print(json.dumps({'text': result.text, 'program': result.program.to_text(), 'prompt': editor._prompt("
        "'a\\n', 'Probe.', __import__('copyedit_lsp.decode.edit').decode.edit.EditOptions())}))\n"
    )
    try:
        run = subprocess.run(
            [sys.executable, "-c", script, fake.url],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=Path(__file__).resolve().parents[1],
        )
    finally:
        fake.close()
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["text"] == "x = 1\n" and out["program"] == '<program>\n<copy lines="1-1"/>\n</program>'
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from copyedit_lsp.decode.prompt import ChatTemplate, program_messages, program_prefix

    formatter = Jinja2ChatFormatter(template=ChatTemplate.CHATML, eos_token="", bos_token="")
    assert out["prompt"] == formatter(messages=program_messages("Probe.", "a\n", splice=True)).prompt + program_prefix()


def test_a_program_that_breaks_the_syntax_gives_way_to_a_remote_rewrite():
    """The server's program leaves out the closing brace: the remote decoder asks for a rewrite,
    whose code is the result; the program is kept as ``replaced``."""
    source = "const add = (a, b) => {\n  return a + b;\n}\n"
    answers = [
        sse('<copy lines="1-1"/>\n'),
        sse("<gen>\n  return a - b;\n</gen>\n", "</program>"),
        sse("const add = (a, b) => {\n  return a - b;\n}\n```\n"),
    ]
    fake = completing(answers)
    try:
        decoder = RemoteDecoder.connect(Endpoint(fake.url))
        result = decoder.edit(source, "Subtract.", EditOptions(language="javascript"))
        assert result.text == "const add = (a, b) => {\n  return a - b;\n}\n"
        assert result.program is None and result.replaced == Program((Copy(1, 1), Gen("  return a - b;\n")))
        assert result.stats.fallback == "syntax" and result.stats.requests == 3
        bodies = [json.loads(r[3]) for r in fake.requests if r[:2] == ("POST", "/v1/completions")]
        assert "grammar" not in bodies[2]  # the rewrite is free text
    finally:
        fake.close()


# The language server over a stand-in: what a server that fails, or stops a gen at its length cap,
# comes to at the client.


@pytest.fixture
def stand_in(request):
    """A stand-in completions server whose POST answers are ``request.param``, in order."""
    fake = FakeServer({("GET", "/v1/models"): [MODELS], ("POST", "/v1/completions"): list(request.param)})
    yield fake
    fake.close()


@pytest_lsp.fixture(config=SERVER)
async def stand_in_client(lsp_client: LanguageClient, stand_in):
    """A VS Code client of the server on the stand-in, without the rewrite fallback (the stand-in
    answers only the requests of the program it scripts)."""
    await start(lsp_client, "visual-studio-code", {"backend": "remote", "remoteUrl": stand_in.url, "fallback": False})
    yield lsp_client
    await lsp_client.shutdown_session()


COPY_FIRST = (200, sse('<copy lines="1-1"/>\n'), 0.0)
VALUES = "a = 1\nb = 2\nc = 3\n"


def completions(fake: FakeServer) -> list[dict]:
    return [json.loads(r[3]) for r in fake.requests if r[:2] == ("POST", "/v1/completions")]


@pytest.mark.parametrize(
    "stand_in, why",
    [
        ([COPY_FIRST, (500, b'{"error": {"message": "out of memory"}}', 0.0)], "answered 500: out of memory"),
        ([COPY_FIRST, (None, b'data: {"choices": [{"text": "<gen>\\n', 0.0)], "broke: peer closed connection"),
    ],
    ids=["http-500", "dropped"],
    indirect=["stand_in"],
)
async def test_a_server_failing_mid_edit_applies_nothing(stand_in_client, stand_in, why):
    """The server answers the program's first request (a copy: the live view shows it), then fails
    the second with a 500 or drops the connection mid-answer: the edit fails with an error that
    says so, no workspace/applyEdit is sent, the progress ends "failed: nothing applied"; and the
    language server serves the next edit."""
    client = stand_in_client
    uri = "file:///tmp/values.py"
    open_document(client, uri, VALUES)
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}
    arguments = {"uri": uri, "range": everything, "instruction": "Make b ten times larger."}
    with pytest.raises(Exception, match=why):
        await run_edit(client, arguments)
    assert len(completions(stand_in)) == 2  # the first answered, the second failed (a completion is never retried)
    assert client.applied == []
    notices = [as_dict(n) for n in client.ops]
    assert notices[0]["op"] == {"kind": "copy", "start": 0, "end": 1} and notices[-1]["done"] is True
    assert ended(client) == "failed: nothing applied"
    stand_in.answers[("POST", "/v1/completions")] = [
        COPY_FIRST,
        (200, sse("<gen>\nb = 20\n</gen>\n", '<copy lines="3-3"/>\n'), 0.0),
        (200, sse("</program>"), 0.0),
    ]
    result = await run_edit(client, arguments)
    assert result["applied"] is True and result["text"] == "a = 1\nb = 20\nc = 3\n"
    (params,) = client.applied
    (change,) = params.edit.document_changes
    assert apply_lsp_edits(VALUES, change.edits) == result["text"]


def finished(text: str, reason: str) -> bytes:
    """A stream of ``text`` in one chunk whose finish reason is ``reason``."""
    chunk = json.dumps({"choices": [{"text": text, "finish_reason": reason}]})
    return f"data: {chunk}\n\ndata: [DONE]\n\n".encode()


SIXTY = "".join(f"value_{i} = {i}\n" for i in range(60))  # 770 bytes: a budget past the gen's cap of 512


@pytest.mark.parametrize(
    "stand_in", [[(200, finished("<gen>\nvalue_0 = 100\nvalue_1 = 1", "length"), 0.0)]], indirect=True
)
async def test_a_gen_the_server_stopped_at_the_length_cap_is_not_applied(stand_in_client, stand_in):
    """The server stops the program's first gen at max_tokens, the gen's length cap (512; the edit's
    budget is larger): the output is cut short by the cap, so nothing is applied and the client is
    told why."""
    client = stand_in_client
    uri = "file:///tmp/sixty.py"
    open_document(client, uri, SIXTY)
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": 60, "character": 0}}
    result = await run_edit(client, {"uri": uri, "range": everything, "instruction": "Make value_0 100."})
    why = f"the model's output was cut short: {CUTS['max_gen_tokens']}"
    assert result["applied"] is False and result["reason"] == why, result
    assert result["text"] == "value_0 = 100\n"  # the gen's whole lines, in place of the sixty
    (request,) = completions(stand_in)
    assert request["max_tokens"] == 512
    assert client.applied == [] and any(CUTS["max_gen_tokens"] in m.message for m in client.messages)
    assert ended(client) == f"not applied: {why}"
