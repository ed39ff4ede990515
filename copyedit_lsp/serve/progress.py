"""An LSP request's work-done progress and stop flag: cancellable, with live figures and the
``copyedit/op`` notices of the live view."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections.abc import AsyncIterator

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from ..decode.edit import Cancelled, EditProgress, EditStats
from .live import OP_NOTIFICATION, LiveOps
from .protocol import FramedServer, request_id


def supports_progress(ls: FramedServer) -> bool:
    window = ls.client_capabilities.window
    return bool(window and window.work_done_progress)


class Progress:
    """Work-done progress for one request: cancellable, reports live figures, sets the stop flag."""

    def __init__(self, ls: FramedServer, title: str, stop: threading.Event):
        self.ls = ls
        self.token = f"copyedit-{uuid.uuid4()}"
        self.enabled = supports_progress(ls)
        self.stop = stop
        self.loop = asyncio.get_running_loop()
        self.started = time.perf_counter()
        self.title = title
        self.cancelled = False  # the edit stopped at the user's request
        self.live: LiveOps | None = None  # the copyedit/op notifications of an edit of one document

    async def begin(self, message: str) -> None:
        if not self.enabled:
            return
        try:
            await self.ls.work_done_progress.create_async(self.token)
        except Exception:  # the client refused: no progress, the edit still runs
            self.enabled = False
            return
        self.ls.work_done_progress.begin(
            self.token, types.WorkDoneProgressBegin(title=self.title, message=message, cancellable=True, percentage=0)
        )
        self.ls.work_done_progress.tokens[self.token].add_done_callback(lambda _: self.stop.set())

    def report(self, message: str, percentage: int | None = None) -> None:
        if self.enabled:
            self.ls.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=message, percentage=percentage, cancellable=True)
            )

    def report_progress(self, update: EditProgress) -> None:
        """Live figures from the decoder's thread (ops so far, copied vs generated tokens, tokens/s)
        and, with :attr:`live`, the ops closed since the last report as ``copyedit/op``."""
        stats = update.stats
        rate = self._rate(stats)
        message = f"{stats.ops} ops, {stats.spliced_tokens} copied / {stats.chosen_tokens} generated tokens, {rate:.0f} output tok/s"
        notices = self.live.notices(update.ops, rate) if self.live is not None else []
        self.loop.call_soon_threadsafe(self._show, message, notices)

    def _rate(self, stats: EditStats) -> float:
        return (stats.chosen_tokens + stats.spliced_tokens) / max(time.perf_counter() - self.started, 1e-3)

    def _show(self, message: str, notices: list[dict]) -> None:
        self.report(message)
        for notice in notices:
            self.ls.protocol.notify(OP_NOTIFICATION, notice)

    def live_done(self, stats: EditStats | None) -> None:
        """The live view's last ``copyedit/op``: the edit has ended."""
        if self.live is not None:
            self.ls.protocol.notify(OP_NOTIFICATION, self.live.done(self._rate(stats) if stats else 0.0))

    def end(self, message: str) -> None:
        if self.enabled and self.token in self.ls.work_done_progress.tokens:  # begun
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
            self.ls.work_done_progress.tokens.pop(self.token, None)


@contextlib.asynccontextmanager
async def work(ls: FramedServer, command: str, title: str) -> AsyncIterator[Progress]:
    """One command's stop flag and cancellable progress.  A :class:`Cancelled` edit ends the block
    with ``progress.cancelled`` set; a cancelled request ends it with pygls's cancellation; any
    other error becomes an InternalError that names the command.  Nothing is applied in either."""
    request, stop = request_id.get(), threading.Event()
    ls.stops[request] = stop
    progress = Progress(ls, title, stop)
    try:
        yield progress
    except Cancelled:
        progress.cancelled = True
        progress.end("cancelled: nothing applied")
    except asyncio.CancelledError:  # $/cancelRequest: the decoder has stopped, the client gets an error
        progress.end("cancelled: nothing applied")
        raise
    except (JsonRpcInvalidParams, JsonRpcInternalError):
        progress.end("failed: nothing applied")
        raise
    except Exception as error:
        progress.end("failed: nothing applied")
        raise JsonRpcInternalError(f"{command}: {error}") from None
    finally:
        ls.stops.pop(request, None)
