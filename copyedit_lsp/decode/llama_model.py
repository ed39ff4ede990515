"""A thin layer over llama-cpp-python's low-level API: load, tokenize, eval a batch, logits, KV truncate.

The KV cache holds one sequence; :class:`LlamaModel` mirrors its tokens so a new prompt reuses the
longest common prefix with what is cached (the prompt-prefix cache).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .models import check_gguf


class LlamaModelError(RuntimeError):
    """The model could not be loaded or evaluated."""


@dataclass
class EvalCounters:
    """Work done by the model: llama_decode calls, tokens evaluated, seconds spent."""

    calls: int = 0
    tokens: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Snapshot:
    """A saved KV cache: its tokens and llama.cpp's serialized state of the sequence."""

    tokens: tuple[int, ...]
    state: bytes


@contextlib.contextmanager
def _quiet_stderr():
    """Silence llama.cpp's C-level logging on stderr while loading."""
    fd = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(fd, 2)
        os.close(fd)


# llama.cpp's CPU matmul for a batch of 8 or more rows of K-quant weights; "0" keeps every batch on
# the one-row kernel. Read once per process, at the first matmul.
TILED_MATMUL_VARIABLE = "GGML_CPU_TILED_MM"

# The context a growable model starts with, and the step it grows by (tokens).
FIRST_CONTEXT = 4096


def llama_system_info() -> str:
    """llama.cpp's build and CPU features, e.g. ``AVX2 = 1 | LLAMAFILE = 1 | ...``."""
    import llama_cpp

    return llama_cpp.llama_print_system_info().decode()


_GPU_DEVICE_TYPES = (1, 2)  # ggml_backend_dev_type: GPU, integrated GPU


def gpu_names() -> list[str]:
    """The GPUs llama.cpp's build can offload to (ggml's backend devices), by description."""
    from llama_cpp import llama_cpp as C

    lib = C._lib  # ggml's device registry, reached through libllama (not bound by llama-cpp-python)
    lib.ggml_backend_dev_get.restype = ctypes.c_void_p
    lib.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
    lib.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_dev_description.restype = ctypes.c_char_p
    lib.ggml_backend_dev_description.argtypes = [ctypes.c_void_p]
    devices = [lib.ggml_backend_dev_get(i) for i in range(lib.ggml_backend_dev_count())]
    return [
        lib.ggml_backend_dev_description(d).decode()
        for d in devices
        if lib.ggml_backend_dev_type(d) in _GPU_DEVICE_TYPES
    ]


@contextlib.contextmanager
def _model_params(**values):
    """Set fields of the model params that ``llama_cpp.Llama`` builds but does not expose."""
    from llama_cpp import llama_cpp as C

    default = C.llama_model_default_params

    def params():
        built = default()
        for name, value in values.items():
            setattr(built, name, value)
        return built

    C.llama_model_default_params = params
    try:
        yield
    finally:
        C.llama_model_default_params = default


class LlamaModel:
    """One loaded model and its single-sequence KV cache.

    ``batch_invariant`` makes a token's logits the same bits however the tokens before it were
    batched (one at a time, or any split), so drafted and undrafted decoding agree token for token.
    It needs llama.cpp built without llamafile's sgemm (``-DGGML_LLAMAFILE=OFF``, ``make exact``),
    keeps every matmul on llama.cpp's one-row kernel and skips weight repacking: batches cost
    more. It is checked by evaluating a probe both ways when the model loads.

    ``n_ctx=0`` sizes the context to the work: it starts at :data:`FIRST_CONTEXT` tokens and
    :meth:`make_room` grows it (the model reloaded, the cache emptied) up to the model's training
    context.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 0,
        n_threads: int | None = None,
        n_gpu_layers: int = 0,
        n_batch: int = 2048,
        n_ubatch: int = 512,
        batch_invariant: bool = False,
    ):
        from llama_cpp import llama_cpp as C

        path = Path(model_path)
        check_gguf(path)
        if batch_invariant:
            _require_batch_invariance()
        self._C = C
        self.path = path
        self.n_gpu_layers = n_gpu_layers
        self._load = functools.partial(
            _load_llama,
            path,
            n_threads=n_threads,
            n_gpu_layers=n_gpu_layers,
            n_batch=n_batch,
            n_ubatch=n_ubatch,
            batch_invariant=batch_invariant,
        )
        self.growable = n_ctx == 0
        self._open(n_ctx or FIRST_CONTEXT)
        self.n_batch = n_batch
        self.n_vocab = self.llama.n_vocab()
        self._batch = C.llama_batch_init(n_batch, 0, 1)
        self.counters = EvalCounters()
        self._pieces: dict[int, bytes] = {}
        self.adapter: Path | None = None  # the adapter set on the context
        if batch_invariant:
            try:
                self._check_batch_invariance()
            except LlamaModelError:
                self.close()
                raise

    def _open(self, n_ctx: int) -> None:
        """Load the model with a context of ``n_ctx`` tokens (at most its training context when growable)."""
        self.llama = self._load(n_ctx=n_ctx)
        C = self._C
        self.n_ctx = self.llama.n_ctx()
        self.n_ctx_train = C.llama_model_n_ctx_train(self.llama.model)
        if self.growable and self.n_ctx > self.n_ctx_train:
            self.llama.close()
            self.llama = self._load(n_ctx=self.n_ctx_train)
            self.n_ctx = self.llama.n_ctx()
        self._ctx = self.llama.ctx
        self._memory = C.llama_get_memory(self._ctx)
        self._vocab = C.llama_model_get_vocab(self.llama.model)
        self._adapters: dict[Path, object] = {}  # loaded LoRA adapters by path
        self.cached: list[int] = []  # tokens in the KV cache, in order

    def make_room(self, need: int) -> bool:
        """Grow a growable context to hold ``need`` tokens, to the next multiple of
        :data:`FIRST_CONTEXT` up to the model's training context. Growing reloads the model (the
        KV cache and saved snapshots are lost; the adapter is set again). Returns whether it grew."""
        if not self.growable or need <= self.n_ctx or self.n_ctx >= self.n_ctx_train:
            return False
        size = min(-(-need // FIRST_CONTEXT) * FIRST_CONTEXT, self.n_ctx_train)
        adapter = self.adapter
        self._free_context()
        self._open(size)
        self.adapter = None
        self.use_adapter(adapter)
        return True

    def _free_context(self) -> None:
        for adapter in self._adapters.values():
            self._C.llama_adapter_lora_free(adapter)
        self._adapters = {}
        self.llama.close()

    def _check_batch_invariance(self, length: int = 16) -> None:
        """Evaluate a probe in one batch and one token at a time: LlamaModelError unless the bits agree."""
        probe = self.tokenize("def probe(values):\n    return sorted(set(values))[:3]\n" * 2)[:length]
        batched = self.eval(probe, logits_from=0)
        self.truncate(0)
        single = np.stack([self.eval([token]) for token in probe])
        self.truncate(0)
        self.counters = EvalCounters()
        if not np.array_equal(batched, single):
            raise LlamaModelError(
                f"llama.cpp's logits depend on batching here although batch invariance was asked for: "
                f"{TILED_MATMUL_VARIABLE} is read at the process's first evaluation, so ask for batch "
                f"invariance before any model is used (restart the server)"
            )

    def close(self) -> None:
        if self._batch is not None:
            self._C.llama_batch_free(self._batch)
            self._batch = None
        self._free_context()

    def use_adapter(self, path: str | Path | None) -> None:
        """Evaluate with the LoRA adapter GGUF at ``path`` (loaded once), or with none.

        Changing it empties the KV cache: what is cached was computed with other weights."""
        path = Path(path) if path is not None else None
        if path == self.adapter:
            return
        C = self._C
        if path is None:
            status = C.llama_set_adapters_lora(self._ctx, None, 0, None)
        else:
            if path not in self._adapters:
                if not path.is_file():
                    raise LlamaModelError(f"no LoRA adapter at {path}")
                with _quiet_stderr():
                    adapter = C.llama_adapter_lora_init(self.llama.model, str(path).encode())
                if not adapter:
                    raise LlamaModelError(f"llama.cpp could not load the LoRA adapter {path} for {self.path.name}")
                self._adapters[path] = adapter
            adapters = (C.llama_adapter_lora_p_ctypes * 1)(self._adapters[path])
            status = C.llama_set_adapters_lora(self._ctx, adapters, 1, (ctypes.c_float * 1)(1.0))
        if status != 0:
            raise LlamaModelError(f"llama.cpp could not set the LoRA adapter {path} (status {status})")
        self.truncate(0)
        self.adapter = path

    @property
    def metadata(self) -> dict[str, str]:
        return self.llama.metadata

    def kernel_facts(self) -> dict:
        """What a kernel benchmark's result records of the model and where it ran."""
        return {
            "model": self.path.stem,
            "device": self.device,
            "n_threads": self.llama.n_threads,
            "n_batch": self.n_batch,
            "n_ubatch": self.llama.context_params.n_ubatch,
        }

    @functools.cached_property
    def device(self) -> str:
        """Where the model runs: ``CPU, 2 threads`` or ``GPU NVIDIA H100 ..., 25 of 25 layers``
        (llama.cpp offloads the repeating layers and then the output layer)."""
        layers = self._C.llama_model_n_layer(self.llama.model) + 1
        gpus = gpu_names() if self._C.llama_supports_gpu_offload() else []
        offloaded = min(layers if self.n_gpu_layers < 0 else self.n_gpu_layers, layers) if gpus else 0
        cpu = f"CPU, {self.llama.n_threads} threads"
        if not offloaded:
            return cpu + (f" (nGpuLayers {self.n_gpu_layers}: this llama.cpp has no GPU)" if self.n_gpu_layers else "")
        where = f"GPU {', '.join(gpus)}, {offloaded} of {layers} layers"
        return where if offloaded == layers else f"{where}, the rest on {cpu}"

    def is_end_of_generation(self, token: int) -> bool:
        """Whether ``token`` ends the model's turn (EOS, ``<|im_end|>``, ...)."""
        return bool(self._C.llama_vocab_is_eog(self._vocab, token))

    @functools.cached_property
    def end_of_generation(self) -> list[int]:
        """Every token that ends the model's turn."""
        return [token for token in range(self.n_vocab) if self.is_end_of_generation(token)]

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        """Tokens of ``text``, no BOS; ``special`` parses control tokens such as ``<|im_start|>``."""
        return self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=special)

    def piece(self, token: int) -> bytes:
        """The bytes a token stands for (control tokens included)."""
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = _piece(self._C, self._vocab, token)
        return piece

    def detokenize(self, tokens: Sequence[int]) -> str:
        return b"".join(self.piece(t) for t in tokens).decode("utf-8", errors="replace")

    def truncate(self, length: int) -> None:
        """Drop the KV cache after its first ``length`` tokens."""
        if length < len(self.cached):
            self._C.llama_memory_seq_rm(self._memory, -1, length, -1)
            del self.cached[length:]

    def eval(self, tokens: Sequence[int], *, logits_from: int | None = None) -> np.ndarray:
        """Evaluate ``tokens`` after the cache in as few llama_decode calls as n_batch allows.

        Returns the logits of the last token (shape ``(n_vocab,)``), or with ``logits_from`` those
        of every token from that index on (``(len(tokens) - logits_from, n_vocab)``): the output
        layer runs only for the rows asked for.
        """
        first = len(tokens) - 1 if logits_from is None else logits_from
        block = self._decode(tokens, [index >= first for index in range(len(tokens))])
        return block[-1] if logits_from is None else block

    def eval_rows(self, tokens: Sequence[int], wanted: Sequence[bool]) -> list[np.ndarray | None]:
        """Evaluate ``tokens`` like :meth:`eval`; the logits after each token where ``wanted`` says
        so, else None (the output layer, a whole vocabulary per row, runs only for those)."""
        block = iter(self._decode(tokens, wanted))
        return [next(block) if want else None for want in wanted]

    def _decode(self, tokens: Sequence[int], wanted: Sequence[bool]) -> np.ndarray:
        """Evaluate ``tokens`` in batches of n_batch; the logits of the ``wanted`` rows, in order,
        copied once into one array."""
        if not tokens:
            raise LlamaModelError("nothing to evaluate")
        if len(self.cached) + len(tokens) > self.n_ctx:
            raise LlamaModelError(f"the context of {self.n_ctx} tokens is full")
        C = self._C
        block = np.empty((sum(map(bool, wanted)), self.n_vocab), dtype=np.float32)
        filled = 0
        started = time.perf_counter()
        for offset in range(0, len(tokens), self.n_batch):
            chunk = tokens[offset : offset + self.n_batch]
            batch = self._batch
            batch.n_tokens = len(chunk)
            base = len(self.cached)
            for i, token in enumerate(chunk):
                batch.token[i] = token
                batch.pos[i] = base + i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = bool(wanted[offset + i])
            status = C.llama_decode(self._ctx, batch)
            if status != 0:
                raise LlamaModelError(f"llama_decode failed with status {status}")
            self.cached.extend(chunk)
            self.counters.calls += 1
            for i in range(len(chunk)):
                if wanted[offset + i]:
                    pointer = C.llama_get_logits_ith(self._ctx, i)
                    block[filled] = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))
                    filled += 1
        self.counters.tokens += len(tokens)
        self.counters.seconds += time.perf_counter() - started
        return block

    def snapshot(self) -> Snapshot:
        """The KV cache's contents, to :meth:`restore` later (a second cached prompt prefix)."""
        C = self._C
        size = C.llama_state_seq_get_size(self._ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = C.llama_state_seq_get_data(self._ctx, buffer, size, 0)
        return Snapshot(tuple(self.cached), bytes(buffer)[:written])

    def restore(self, snapshot: Snapshot) -> None:
        """Make the KV cache hold exactly what it held at ``snapshot``."""
        C = self._C
        C.llama_memory_seq_rm(self._memory, -1, -1, -1)
        self.cached = []
        buffer = (ctypes.c_uint8 * len(snapshot.state)).from_buffer_copy(snapshot.state)
        with _quiet_stderr():
            restored = C.llama_state_seq_set_data(self._ctx, buffer, len(snapshot.state), 0)
        if snapshot.state and not restored:
            raise LlamaModelError("llama.cpp could not restore a saved KV cache")
        self.cached = list(snapshot.tokens)

    def prefill(self, tokens: Sequence[int]) -> tuple[np.ndarray, int]:
        """Make the cache hold exactly ``tokens``, reusing the longest cached prefix.

        Returns the last token's logits and how many tokens were reused from the cache.
        """
        reuse = 0
        limit = min(len(tokens), len(self.cached)) - 1  # re-evaluate at least one token for its logits
        while reuse < limit and self.cached[reuse] == tokens[reuse]:
            reuse += 1
        self.truncate(reuse)
        return self.eval(tokens[reuse:]), reuse


def _piece(C, vocab, token: int) -> bytes:
    """The bytes of ``token`` in ``vocab`` (llama_token_to_piece, control tokens included)."""
    buffer = ctypes.create_string_buffer(64)
    n = C.llama_token_to_piece(vocab, token, buffer, len(buffer), 0, True)
    if n < 0:
        buffer = ctypes.create_string_buffer(-n)
        n = C.llama_token_to_piece(vocab, token, buffer, len(buffer), 0, True)
    return buffer.raw[:n]


class Vocabulary:
    """A model's tokenizer alone (llama.cpp's vocab-only load): no weights, no context."""

    def __init__(self, model_path: str | Path):
        from llama_cpp import llama_cpp as C

        path = Path(model_path)
        check_gguf(path)
        C.llama_backend_init()
        params = C.llama_model_default_params()
        params.vocab_only = True
        with _quiet_stderr():
            self._model = C.llama_model_load_from_file(str(path).encode(), params)
        if not self._model:
            raise LlamaModelError(f"llama.cpp could not load the vocabulary of {path}")
        self._C = C
        self.vocab = C.llama_model_get_vocab(self._model)  # llama.cpp's handle, for its own samplers

    @property
    def metadata(self) -> dict[str, str]:
        """The GGUF's key-value metadata (the chat template, the architecture, ...)."""
        C = self._C
        values = {}
        buffer = ctypes.create_string_buffer(1 << 16)
        for i in range(C.llama_model_meta_count(self._model)):
            C.llama_model_meta_key_by_index(self._model, i, buffer, len(buffer))
            key = buffer.value.decode("utf-8", errors="replace")
            C.llama_model_meta_val_str_by_index(self._model, i, buffer, len(buffer))
            values[key] = buffer.value.decode("utf-8", errors="replace")
        return values

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        """Tokens of ``text``, no BOS; ``special`` parses control tokens such as ``<|im_start|>``."""
        data = text.encode("utf-8")
        tokens = (self._C.llama_token * (len(data) + 8))()
        n = self._C.llama_tokenize(self.vocab, data, len(data), tokens, len(tokens), False, special)
        if n < 0:
            raise LlamaModelError("llama.cpp could not tokenize the text")
        return list(tokens[:n])

    def piece(self, token: int) -> bytes:
        """The bytes a token stands for (control tokens included)."""
        return _piece(self._C, self.vocab, token)

    def close(self) -> None:
        if self._model:
            self._C.llama_model_free(self._model)
            self._model = None


def _require_batch_invariance() -> None:
    """Make llama.cpp's matrix products batch-invariant, or LlamaModelError where its build cannot."""
    if "LLAMAFILE = 1" in llama_system_info():
        raise LlamaModelError(
            "batch-invariant evaluation needs llama-cpp-python built without llamafile's sgemm "
            "(CMAKE_ARGS=-DGGML_LLAMAFILE=OFF; `make exact` builds one in .venv-exact)"
        )
    os.environ[TILED_MATMUL_VARIABLE] = "0"


def _load_llama(
    path: Path,
    *,
    n_ctx: int,
    n_threads: int | None,
    n_gpu_layers: int,
    n_batch: int,
    n_ubatch: int,
    batch_invariant: bool,
):
    """llama-cpp-python's model and context for ``path``; LlamaModelError when llama.cpp cannot load it."""
    import llama_cpp

    threads = n_threads or max(1, os.cpu_count() or 1)
    offload = n_gpu_layers != 0 and llama_cpp.llama_supports_gpu_offload()
    try:
        with _quiet_stderr(), _model_params(use_extra_bufts=not batch_invariant):
            return llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=threads,
                n_threads_batch=threads,
                n_gpu_layers=n_gpu_layers,
                n_batch=n_batch,
                n_ubatch=min(n_ubatch, n_batch),
                logits_all=False,
                # llama.cpp's CPU flash attention tiles batches (not batch-invariant); on a GPU it is
                # the fast attention kernel
                flash_attn=offload and not batch_invariant,
                # verbose=False would redirect the process's stdout to /dev/null while loading,
                # which loses an LSP server's replies; only stderr is silenced (above).
                verbose=True,
            )
    except Exception as error:  # llama.cpp reports a bad file only as "failed to load"
        raise LlamaModelError(f"llama.cpp could not load {path}: {error}") from error
