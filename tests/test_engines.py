"""The remote backend against the engines teams run, each on 127.0.0.1 with the default model and
an API key, next to the local decoder with the same model: llama.cpp's llama-server (built by
``make llama-server`` from the pinned llama-cpp-python sdist's llama.cpp, reading the GGUF) and
vLLM's CPU build (``make vllm``: its own environment, the GGUF exported once as a Hugging Face
folder in float32)."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from test_remote import check_forced_mode, free_port

from copyedit_lsp import models
from copyedit_lsp.backend import Backend, Vocabulary
from copyedit_lsp.bench.checks import die_with_parent
from copyedit_lsp.datasets import load_items
from copyedit_lsp.decoder import Decoder
from copyedit_lsp.edit import DEFAULT_MODEL, Cancelled, ContextOverflow, EditOptions
from copyedit_lsp.grammar import op_grammar
from copyedit_lsp.program import Copy, Program
from copyedit_lsp.prompt import SourceView
from copyedit_lsp.remote import Answer, Completions, Endpoint, RemoteDecoder, RemoteError
from copyedit_lsp.remote import _read_op as read_op
from copyedit_lsp.resolver import oracle_program

ROOT = Path(__file__).parents[1]
LLAMA_SERVER = ROOT / ".engines" / "llama-server"
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
API_KEY = "copyedit-test-key"
CONTEXT = 4096

# An engine starts in the setup of its first test (vLLM: 109 s on a quiet 2-core machine), which
# then runs both local decoders beside it (129 s): 238 s together, near the 300 s default.
pytestmark = [pytest.mark.model, pytest.mark.timeout(900)]


@dataclass
class Served:
    """An engine serving the default model on a free port of 127.0.0.1; its log in a file."""

    name: str
    process: subprocess.Popen
    url: str
    log: Path
    engine: str = "llama.cpp"
    block: int = 1  # the tokens of the engine's prefix cache blocks: it reuses whole blocks
    answers: list[Answer] = field(default_factory=list)

    def endpoint(self, api_key: str | None = API_KEY) -> Endpoint:
        return Endpoint(self.url, engine=self.engine, api_key=api_key, timeout=120.0)

    def get(self, path: str) -> httpx.Response:
        """A GET on the server's own API (``/slots``, ``/metrics``), outside ``/v1``."""
        root = self.url.removesuffix("/v1")
        return httpx.get(f"{root}{path}", headers={"Authorization": f"Bearer {API_KEY}"}, timeout=10)

    def generating(self) -> tuple[bool, int]:
        """Whether the engine is generating, and the tokens it generated for the latest request
        (llama-server: its slot's count; vLLM: its counter of all generated tokens)."""
        if self.name == "llama-server":
            (slot,) = self.get("/slots").json()
            return slot["is_processing"], slot["next_token"][0]["n_decoded"]
        metrics = self.get("/metrics").text
        return _metric(metrics, "vllm:num_requests_running") > 0, int(_metric(metrics, "vllm:generation_tokens_total"))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def _metric(metrics: str, name: str) -> float:
    """The sum of a Prometheus metric's samples (over its labels)."""
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines() if line.startswith((name + "{", name + " "))
    )


def _started(served: Served, health: str, seconds: float) -> Served:
    """``served`` once its ``health`` path answers 200 (or a clear failure with its log's end)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if served.process.poll() is not None:
            raise AssertionError(f"{served.name} exited: {served.log.read_text(errors='replace')[-3000:]}")
        try:
            if served.get(health).status_code == 200:
                return served
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    served.stop()
    raise TimeoutError(f"{served.name} did not start in {seconds:g} s")


def start_llama_server(model: Path, log: Path) -> Served:
    port = free_port()
    command = [
        str(LLAMA_SERVER),
        *("--model", str(model), "--alias", DEFAULT_MODEL, "--ctx-size", str(CONTEXT), "--threads", "2"),
        *("--parallel", "1", "--host", "127.0.0.1", "--port", str(port), "--api-key", API_KEY, "--slots"),
    ]
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
    return _started(Served("llama-server", process, f"http://127.0.0.1:{port}/v1", log), "/health", 180)


def start_vllm(log: Path) -> Served:
    port = free_port()
    command = [
        str(VLLM_PYTHON),
        *("-m", "vllm.entrypoints.openai.api_server", "--model", str(models.hf_folder(DEFAULT_MODEL))),
        *("--served-model-name", DEFAULT_MODEL, "--max-model-len", str(CONTEXT), "--dtype", "float32"),
        *("--block-size", "32", "--enable-prompt-tokens-details", "--host", "127.0.0.1", "--port", str(port)),
        *("--api-key", API_KEY),
    ]
    environment = os.environ | {"VLLM_CPU_KVCACHE_SPACE": "2"}  # GiB of KV cache
    process = subprocess.Popen(
        command, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=environment, preexec_fn=die_with_parent
    )
    return _started(
        Served("vllm", process, f"http://127.0.0.1:{port}/v1", log, engine="vllm", block=32), "/health", 600
    )


@pytest.fixture(scope="module", params=["llama-server", "vllm"])
def served(request, default_model_path, tmp_path_factory):
    if request.param == "llama-server":
        if not LLAMA_SERVER.exists():
            pytest.fail(f"{LLAMA_SERVER} is missing: `make llama-server` builds it (make test does)")
        server = start_llama_server(default_model_path, tmp_path_factory.mktemp("llama-server") / "server.log")
    else:
        if not VLLM_PYTHON.exists():
            pytest.fail(f"{VLLM_PYTHON} is missing: `make vllm` installs it (make test does)")
        server = start_vllm(tmp_path_factory.mktemp("vllm") / "server.log")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def remote(served):
    decoder = RemoteDecoder.connect(served.endpoint())
    stream = decoder.completions.stream

    def recorded(*args, **kwargs) -> Answer:  # every answer, for the engine's own counters
        answer = stream(*args, **kwargs)
        served.answers.append(answer)
        return answer

    decoder.completions.stream = recorded  # type: ignore[method-assign]
    yield decoder
    decoder.close()


@pytest.fixture(scope="module")
def local(default_model_path):
    """The local decoder with the base model (the remote backend sends no adapter)."""
    decoder = Decoder(Backend(default_model_path, n_ctx=CONTEXT, n_threads=2))
    yield decoder
    decoder.close()


@pytest.fixture(scope="module")
def items():
    return load_items("humanevalfix-python", limit=6)


def test_programs_and_texts_equal_the_local_decoders(remote, local, items):
    """Program mode (the copy check off locally: a completions server returns no logits of copied
    lines) and rewrite mode write what the local decoder writes, op for op."""
    assert remote.model == DEFAULT_MODEL
    same = []
    for item in items:
        options = EditOptions(language=item.language, copy_check=0.0, fallback=False)  # the programs are compared
        here, there = (
            local.edit(item.before, item.instruction, options),
            remote.edit(item.before, item.instruction, options),
        )
        same.append(there.program == here.program and there.text == here.text)
        assert there.stats.requests >= len(there.program.ops)
    assert sum(same) >= len(items) - 1, same  # a long free gen may part at a near tie
    for item in items[:2]:
        options = EditOptions(mode="rewrite", language=item.language)
        here, there = (
            local.edit(item.before, item.instruction, options),
            remote.edit(item.before, item.instruction, options),
        )
        assert there.text == here.text and there.stats.requests == 1, item.id


def test_every_answer_keeps_to_the_grammar(remote, items):
    """A prompt that invites plain code gets one op of the program grammar and nothing else: a
    copy inside the lines the grammar allows, a gen, or the program's end."""
    item = items[0]
    n = len(SourceView.of(item.before).lines)
    prompt = remote._prompt(item.before, item.instruction, EditOptions()) + "<gen>\ndef"  # mid-gen, off the grammar
    for first in (1, n):
        answer = remote.completions.stream(
            prompt, grammar=op_grammar(n, first), max_tokens=64, model=remote.model, on_piece=lambda answer: False
        )
        op, _ = read_op(answer, n)  # RemoteError: outside the grammar
        if isinstance(op, Copy):
            assert first <= op.start <= op.end <= n, answer.text


def test_a_copy_is_spliced_through_the_engines_prefix_cache(remote, served, items, default_model_path):
    """After a copy, the next request reuses the whole prompt before it (the engine's own counter)
    and evaluates only the copied lines, in one prefill."""
    item = items[0]
    source = item.before + f"# {time.time_ns()}\n"  # a text no earlier request held (none is cached)
    view = SourceView.of(source)
    program = Program((Copy(1, len(view.lines)),))
    options = EditOptions(mode="forced", program=program)
    remote.warm(options)  # the fixed prompt prefix in the cache
    served.answers.clear()
    assert remote.edit(source, item.instruction, options).text == source
    first, second = served.answers
    vocabulary = Vocabulary(default_model_path)
    try:
        copied = len(vocabulary.tokenize(view.span(1, len(view.lines))))
    finally:
        vocabulary.close()
    assert first.prompt_cached is not None and first.prompt_cached > 300  # the fixed prompt prefix
    reused = first.prompt_cached + first.prompt_evaluated  # the first request's whole prompt
    assert second.prompt_cached >= reused // served.block * served.block
    # the copied lines, maybe a token the tag and the lines share, and what fills the last block
    assert copied <= second.prompt_evaluated <= copied + 2 + served.block - 1


def test_forced_mode_writes_the_script(remote, items):
    check_forced_mode(remote, items)


def test_progress_streams_and_cancelling_stops_the_engine(remote, served, items):
    item = items[1]
    seen: list[int] = []
    generated = 0 if served.name == "llama-server" else served.generating()[1]
    with pytest.raises(Cancelled):
        remote.edit(
            item.before,
            item.instruction,
            EditOptions(mode="rewrite"),
            stop=lambda: len(seen) >= 5,
            on_progress=lambda progress: seen.append(progress.stats.chosen_tokens),
        )
    assert seen == sorted(seen) and seen[-1] > seen[0]  # the answer grew piece by piece
    deadline = time.monotonic() + 10
    while (state := served.generating())[0]:
        assert time.monotonic() < deadline, "the engine went on generating after the stream closed"
        time.sleep(0.1)
    assert state[1] - generated < 40  # stopped, not run to the end of the rewrite (about 100 tokens)
    result = remote.edit(
        item.before, item.instruction, EditOptions(mode="forced", program=oracle_program(item.before, item.after))
    )
    assert result.text == item.after  # and it serves on


def test_failures_are_clear_errors(remote, served):
    with pytest.raises(ContextOverflow, match="context"):
        remote.edit("".join(f"value_{i} = {i} * {i} + {i}\n" for i in range(1500)), "Rename value to v.")
    with pytest.raises(RemoteError, match="grammar"):
        remote.completions.stream("x", grammar="root ::= (", max_tokens=4, model=remote.model, on_piece=lambda a: False)
    with pytest.raises(RemoteError, match="API key"):
        RemoteDecoder.connect(served.endpoint(api_key="not-the-key"))
    closed = Completions(Endpoint(f"http://127.0.0.1:{free_port()}/v1"))
    try:
        with pytest.raises(RemoteError, match="cannot reach"):
            closed.models()
    finally:
        closed.close()
