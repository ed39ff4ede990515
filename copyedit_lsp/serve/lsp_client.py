"""A minimal LSP client session with the real server over stdio, for the demo and the benchmarks."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from ..core.scope import language_for
from .live import OP_NOTIFICATION


class ServerSession:
    """``copyedit-lsp`` in a subprocess, initialized, recording applyEdits and progress."""

    def __init__(self, options: dict, *, show_progress: bool = False, verbose: bool = False):
        self.options = options
        self.show_progress = show_progress
        self.verbose = verbose  # the server's log messages on stderr (else dropped)
        self.client = LanguageClient("copyedit-client", "0")
        self.applied: list[tuple[float, types.ApplyWorkspaceEditParams]] = []  # (perf_counter, params)
        self._register()

    def _register(self) -> None:
        client = self.client

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            self.applied.append((time.perf_counter(), params))
            return types.ApplyWorkspaceEditResult(applied=True)

        @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def create_progress(params: types.WorkDoneProgressCreateParams) -> None:
            return None

        @client.feature(types.PROGRESS)
        def progress(params: types.ProgressParams) -> None:
            if self.show_progress:
                value = params.value or {}
                message = value.get("message") or value.get("title") or ""
                end = "\n" if value.get("kind") == "end" else ""
                print(f"\r\x1b[2K[{value.get('kind')}] {message}", end=end, file=sys.stderr, flush=True)

        @client.feature(OP_NOTIFICATION)
        def live_op(params: object) -> None:
            """The live view's ops: nothing to draw here (unhandled, pygls would warn of each)."""

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def show_message(params: types.ShowMessageParams) -> None:
            print(f"\n{params.message}", file=sys.stderr)

        @client.feature(types.WINDOW_LOG_MESSAGE)
        def log_message(params: types.LogMessageParams) -> None:
            if self.verbose:
                print(f"[server] {params.message}", file=sys.stderr)

    @property
    def pid(self) -> int:
        return self.client._server.pid

    async def __aenter__(self) -> ServerSession:
        await self.client.start_io(sys.executable, "-m", "copyedit_lsp.serve.server")
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(
                    window=types.WindowClientCapabilities(work_done_progress=True),
                    workspace=types.WorkspaceClientCapabilities(
                        apply_edit=True, workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)
                    ),
                ),
                initialization_options=self.options,
            )
        )
        self.client.initialized(types.InitializedParams())
        return self

    async def __aexit__(self, *exc) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()

    def open(self, path: Path, text: str, version: int = 1) -> str:
        """Open ``text`` as the document at ``path``; return its URI."""
        uri = path.resolve().as_uri()
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id=language_for(None, str(path)) or "", version=version, text=text
                )
            )
        )
        return uri

    async def edit(self, uri: str, instruction: str, line: int) -> dict:
        """Run ``copyedit.edit`` with the cursor at 0-based ``line``."""
        cursor = {"line": line, "character": 0}
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="copyedit.edit",
                arguments=[{"uri": uri, "instruction": instruction, "range": {"start": cursor, "end": cursor}}],
            )
        )

    async def code_actions(self, uri: str, line: int) -> list:
        cursor = types.Position(line=line, character=0)
        return await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(start=cursor, end=cursor),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
