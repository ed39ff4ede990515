"""One launcher for the completions servers the remote backend is tested against, each on a free
port of 127.0.0.1 with the tests' 0.5B (tests/mechanism.py), its log in a file:

* ``llama-cpp-python``: the bindings' own ``python -m llama_cpp.server`` (in .venv);
* ``llama-server``: llama.cpp's server, built by ``make llama-server`` from the pinned
  llama-cpp-python sdist's llama.cpp, reading the GGUF;
* ``vllm``: vLLM's CPU build (``make vllm``: its own environment, the GGUF exported once as a
  Hugging Face folder in float32).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from mechanism import MODEL

from copyedit_lsp.bench.checks import die_with_parent
from copyedit_lsp.decode import models
from copyedit_lsp.decode.completions import Answer, Endpoint

ROOT = Path(__file__).parents[1]
LLAMA_SERVER = ROOT / ".engines" / "llama-server"
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
ENGINES = ("llama-cpp-python", "llama-server", "vllm")
API_KEY = "copyedit-test-key"
CONTEXT = 4096
PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Served:
    """An engine serving the 0.5B at ``url``; the answers a test records in ``answers``."""

    name: str
    process: subprocess.Popen
    url: str
    log: Path
    api_key: str | None
    engine: str = "llama.cpp"  # the remote backend's engine setting
    block: int = 1  # the tokens of the engine's prefix cache blocks: it reuses whole blocks
    # What the engine's refusal of a grammar that does not parse says: llama-cpp-python's server
    # starts the stream, fails on the grammar and drops the connection, so the error can only say that.
    bad_grammar: str = "grammar"
    answers: list[Answer] = field(default_factory=list)

    def endpoint(self, api_key: str | None = None) -> Endpoint:
        return Endpoint(self.url, engine=self.engine, api_key=api_key or self.api_key, timeout=120.0)

    def get(self, path: str) -> httpx.Response:
        """A GET on the server's own API (``/health``, ``/slots``, ``/metrics``), outside ``/v1``."""
        root = self.url.removesuffix("/v1")
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return httpx.get(f"{root}{path}", headers=headers, timeout=10)

    def prompt_counts(self, since: int) -> list[tuple[int, int]]:
        """(taken from the prefix cache, evaluated) prompt tokens of each request after
        ``since`` (:meth:`mark`), as the engine counts them: llama-cpp-python's log, the others'
        usage of each recorded answer."""
        if self.name == "llama-cpp-python":
            with self.log.open("rb") as log:
                log.seek(since)
                text = log.read().decode(errors="replace")
            return [(int(a), int(b)) for a, b in PREFIX_HIT.findall(text)]
        return [(a.prompt_cached or 0, a.prompt_evaluated or 0) for a in self.answers[since:]]

    def mark(self) -> int:
        """Where :meth:`prompt_counts` begins for the requests after now."""
        return self.log.stat().st_size if self.name == "llama-cpp-python" else len(self.answers)

    def generating(self) -> tuple[bool, int] | None:
        """Whether the engine is generating, and the tokens it generated for the latest request
        (llama-server: its slot's count; vLLM: its counter of all generated tokens); None where
        the engine does not say (llama-cpp-python)."""
        if self.name == "llama-server":
            (slot,) = self.get("/slots").json()
            return slot["is_processing"], slot["next_token"][0]["n_decoded"]
        if self.name == "vllm":
            metrics = self.get("/metrics").text
            running = _metric(metrics, "vllm:num_requests_running") > 0
            return running, int(_metric(metrics, "vllm:generation_tokens_total"))
        return None

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def _metric(metrics: str, name: str) -> float:
    """The sum of a Prometheus metric's samples (over its labels)."""
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines() if line.startswith((name + "{", name + " "))
    )


def start_engine(name: str, model: Path, log: Path, *, api_key: str | None = API_KEY) -> Served:
    """Start engine ``name`` (one of :data:`ENGINES`) serving ``model``; it once its health check answers."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    key = ("--api-key", api_key) if api_key else ()
    environment = os.environ
    if name == "llama-cpp-python":
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL]
        command += ["--n_ctx", str(CONTEXT), "--n_threads", "2", "--n_batch", "2048", "--host", "127.0.0.1"]
        command += ["--port", str(port), "--interrupt_requests", "False", *(("--api_key", api_key) if api_key else ())]
        served = Served(name, _spawn(command, log, environment), url, log, api_key, bad_grammar="connection .* broke")
        return _started(served, "/v1/models", 180)
    if name == "llama-server":
        if not LLAMA_SERVER.exists():
            raise FileNotFoundError(f"{LLAMA_SERVER} is missing: `make llama-server` builds it (make test does)")
        command = [str(LLAMA_SERVER), "--model", str(model), "--alias", MODEL, "--ctx-size", str(CONTEXT)]
        command += ["--threads", "2", "--parallel", "1", "--host", "127.0.0.1", "--port", str(port), *key, "--slots"]
        return _started(Served(name, _spawn(command, log, environment), url, log, api_key), "/health", 180)
    if not VLLM_PYTHON.exists():
        raise FileNotFoundError(f"{VLLM_PYTHON} is missing: `make vllm` installs it (make test does)")
    command = [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server"]
    command += ["--model", str(models.hf_folder(MODEL)), "--served-model-name", MODEL]
    command += ["--max-model-len", str(CONTEXT), "--dtype", "float32", "--block-size", "32"]
    command += ["--enable-prompt-tokens-details", "--host", "127.0.0.1", "--port", str(port), *key]
    environment = os.environ | {"VLLM_CPU_KVCACHE_SPACE": "2"}  # GiB of KV cache
    served = Served(name, _spawn(command, log, environment), url, log, api_key, engine="vllm", block=32)
    return _started(served, "/health", 600)


def _spawn(command: list[str], log: Path, environment) -> subprocess.Popen:
    return subprocess.Popen(
        command, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=environment, preexec_fn=die_with_parent
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
