"""The language server: thin pygls handlers over :mod:`actions`, :mod:`region`, :mod:`worker`.

Every change goes to the client as a versioned ``workspace/applyEdit``; the server never writes a file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import (
    JsonRpcInvalidParams,
)
from pygls.uris import from_fs_path, to_fs_path

from .. import __version__
from ..core.change import ChangeError, read_change
from ..core.program import Program
from ..core.resolver import Source, sources, split_lines
from ..core.scope import language_for, top_level_chunks
from ..decode.edit import FALLBACKS, Cancelled, EditResult
from ..decode.refusal import DOCUMENT_CHANGED, Refusal, check
from .actions import Diagnostic, list_actions
from .config import Settings, updated
from .live import LiveOps
from .progress import Progress, supports_progress, work
from .protocol import CopyeditProtocol, FramedServer
from .region import (
    ApplyArguments,
    EditArguments,
    RefactorArguments,
    Region,
    apply_region,
    check_size,
    choice_names,
    chunk_lines,
    narrowed_scope,
    parse_arguments,
    plan_region,
    replace_region,
)
from .review import Applied, answer_of, apply_edit, hunk_review, supports_annotations, take_loss
from .textedits import PROVENANCE_NOTIFICATION, describe_hunk, hunk_provenance, region_edits
from .worker import Worker
from .workspace_files import WorkspaceFile, workspace_files

EDIT_COMMAND = "copyedit.edit"
APPLY_COMMAND = "copyedit.apply"
REFACTOR_COMMAND = "copyedit.refactorWorkspace"
CANCEL_COMMAND = "copyedit.cancel"
CANCELLED = {"applied": False, "reason": "cancelled"}
LOG_CHARS = 2000

log = logging.getLogger(__name__)


class CopyeditServer(FramedServer):
    """The server's state: settings, the worker thread, the stop flags of running requests by id."""

    def __init__(self) -> None:
        super().__init__("copyedit-lsp", __version__, protocol_cls=CopyeditProtocol)
        self.settings = Settings()
        self.worker = Worker()
        self.editing: dict[str, set[threading.Event]] = {}  # stop flags of the running edits by document URI
        self.renamed: list[str] = []  # warnings of initializationOptions under their old names


server = CopyeditServer()


def _notify(ls: CopyeditServer, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
    ls.window_show_message(types.ShowMessageParams(type=kind, message=f"copyedit: {message}"))


def _load_model(ls: CopyeditServer) -> None:
    """Load the configured model in the background, with progress where the client shows it."""
    token = f"copyedit-load-{uuid.uuid4()}"
    loop = asyncio.get_running_loop()
    progress = supports_progress(ls)
    if progress:
        ls.work_done_progress.create(token)
        settings = ls.settings
        what = f"connecting to {settings.remote_url}" if settings.backend == "remote" else f"loading {settings.model}"
        ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title="copyedit", message=what))

    def done(error: Exception | None) -> None:
        def report() -> None:
            ready = f"model ready: {ls.worker.device}"
            if progress:
                ls.work_done_progress.end(
                    token, types.WorkDoneProgressEnd(message="model failed to load" if error else ready)
                )
            if error is not None:
                _notify(ls, f"the model could not be loaded: {error}", types.MessageType.Error)
            else:
                ls.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=f"copyedit: {ready}"))

        loop.call_soon_threadsafe(report)

    ls.worker.load(ls.settings, done)


@server.feature(types.INITIALIZE)
def initialize(ls: CopyeditServer, params: types.InitializeParams) -> None:
    """``initialize``: read ``initializationOptions``; the model loads after ``initialized``."""
    try:
        ls.settings = updated(ls.settings, params.initialization_options, ls.renamed.append)
    except ValueError as error:
        log.error("%s; using the defaults", error)


@server.feature(types.INITIALIZED)
def initialized(ls: CopyeditServer, params: types.InitializedParams) -> None:
    """``initialized``: warn of settings under their old names; start loading the model in the background."""
    for warning in ls.renamed:
        _notify(ls, warning, types.MessageType.Warning)
    _load_model(ls)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: CopyeditServer, params: types.DidChangeConfigurationParams) -> None:
    """``workspace/didChangeConfiguration``: new settings; reload the model if its settings changed."""
    try:
        new = updated(ls.settings, params.settings, lambda warning: _notify(ls, warning, types.MessageType.Warning))
    except ValueError as error:
        _notify(ls, str(error), types.MessageType.Error)
        return
    reload = new.model_keys != ls.settings.model_keys
    ls.settings = new
    if reload:
        _load_model(ls)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite]),
)
async def code_action(ls: CopyeditServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """``textDocument/codeAction``: instruction comments, quick fixes, presets, "Edit with instruction...".
    The document is parsed off the event loop; nothing for a document too large to edit (past
    maxFileBytes), at once."""
    document = _open_document(ls, params.text_document.uri)
    if document is None or len(document.source) > ls.settings.max_file_bytes:
        return []
    start, end = params.range.start.line, params.range.end.line
    diagnostics = [
        Diagnostic(d.range.start.line, d.range.end.line, d.message, None if d.code is None else str(d.code))
        for d in params.context.diagnostics
        if d.source != "copyedit"
    ]
    actions = await asyncio.to_thread(list_actions, document.source, document.language_id, start, end, diagnostics)
    return [
        types.CodeAction(
            title=action.title,
            kind=action.kind,
            command=types.Command(
                title=action.title, command=EDIT_COMMAND, arguments=[_edit_arguments(params, document, action)]
            ),
        )
        for action in actions
    ]


def _edit_arguments(params: types.CodeActionParams, document, action) -> dict:
    """``copyedit.edit``'s argument object for a code action."""
    arguments: dict = {"uri": params.text_document.uri, "version": document.version}
    if action.instruction is not None:
        arguments["instruction"] = action.instruction
    if action.comment_line is not None:
        arguments["commentLine"] = action.comment_line
    cursor = types.Position(line=action.start_line, character=0)
    selection = params.range if action.follows_selection else types.Range(start=cursor, end=cursor)
    arguments["range"] = {
        "start": {"line": selection.start.line, "character": selection.start.character},
        "end": {"line": selection.end.line, "character": selection.end.character},
    }
    return arguments


def _open_document(ls: CopyeditServer, uri: str):
    documents = ls.workspace.text_documents
    return documents.get(uri) or documents.get(unquote(uri))


def _command_arguments(command: str, arguments: tuple, kind: type):
    """A command's argument object, with an instruction; an InvalidParams error that says why otherwise."""
    try:
        args = parse_arguments(arguments, kind)
    except ValueError as error:
        raise JsonRpcInvalidParams(f"{command}: {error}") from None
    if not args.instruction or not args.instruction.strip():
        raise JsonRpcInvalidParams(f"{command}: no instruction; say what to change")
    return args


@server.command(EDIT_COMMAND)
async def edit(ls: CopyeditServer, *arguments) -> dict:
    """``workspace/executeCommand`` ``copyedit.edit {uri, range?, instruction}``: edit a scope with the model."""
    args = _command_arguments(EDIT_COMMAND, arguments, EditArguments)
    document = _document_to_edit(ls, args)
    text, version = document.source, document.version
    language = language_for(document.language_id, args.uri)
    region = await asyncio.to_thread(_invalid_params, EDIT_COMMAND, plan_region, text, language, args)
    async with work(ls, EDIT_COMMAND, "copyedit") as progress:
        with _editing(ls, args.uri, progress.stop):
            if region.kind == "document":  # the instruction names no definition: the model may choose one
                region = await _chosen_region(ls, text, language, args, region)
            what = f"{region.kind} {region.name}" if region.name else region.kind
            progress.live = LiveOps(args.uri, region.start)
            await progress.begin(f"editing {what} (lines {region.start + 1}-{region.end})")
            result = None
            try:
                result = await _run_region(
                    ls, region, args.instruction, language, progress.stop, progress.report_progress
                )
            finally:
                progress.live_done(result.stats if result else None)
    program = result.program if result is not None and region.comment_line is None else None
    edited = Edited(args.uri, document, version, text, region, result, program, language, args.instruction or "")
    return await _conclude(ls, progress, edited)


@server.command(APPLY_COMMAND)
async def apply(ls: CopyeditServer, *arguments) -> dict:
    """``workspace/executeCommand`` ``copyedit.apply {uri, change, version?, range?, form?, partial?,
    shortcut?, instruction?}``: merge a change an assistant wrote into the document (or the selected lines)."""
    args = _invalid_params(APPLY_COMMAND, parse_arguments, arguments, ApplyArguments)
    document = _document_to_edit(ls, args, APPLY_COMMAND)
    _invalid_params(APPLY_COMMAND, check_size, args.change, ls.settings.max_file_bytes, "change")
    change = _invalid_params(APPLY_COMMAND, read_change, args.change, args.form)
    text, version = document.source, document.version
    language = language_for(document.language_id, args.uri)
    region = _invalid_params(APPLY_COMMAND, apply_region, text, args)
    async with work(ls, APPLY_COMMAND, "copyedit apply") as progress:
        with _editing(ls, args.uri, progress.stop):
            progress.live = LiveOps(args.uri, region.start)
            await progress.begin(f"applying a {change.form} (lines {region.start + 1}-{region.end})")
            applied = None
            try:
                applied = await ls.worker.apply(
                    region.source, change, ls.settings, language=language or "", instruction=args.instruction or "",
                    partial=args.partial, shortcut=args.shortcut, stop=progress.stop,
                    on_progress=progress.report_progress,
                )  # fmt: skip
            except ChangeError as error:  # another language's code, a block found nowhere or twice
                raise JsonRpcInvalidParams(f"{APPLY_COMMAND}: {error}; nothing was applied") from None
            finally:
                progress.live_done(applied.result.stats if applied else None)
    label = f"apply a {change.form}" + (f": {args.instruction}" if args.instruction else "")
    result = applied.result if applied is not None else None
    written = tuple(sources(result.program)) if result is not None and result.program is not None else None
    edited = Edited(args.uri, document, version, text, region, result, None, language, label, written,
                    applied.unplaced if applied else (), applied.invented if applied else (), args.partial)  # fmt: skip
    answer = await _conclude(ls, progress, edited)
    return answer | ({"unplaced": list(applied.unplaced)} if applied is not None and applied.unplaced else {})


@dataclass(frozen=True)
class Edited:
    """A finished edit or apply of ``uri``: the document and text it started from, the region,
    the result (None: cancelled) and its program (for minimal edits), the label a review shows;
    an apply's: where each line of its result comes from, the parts of its change not placed, the
    lines it invents, and whether the user takes a result that lacks parts (``partial``)."""

    uri: str
    document: object
    version: int | None
    text: str
    region: Region
    result: EditResult | None
    program: Program | None
    language: str | None
    label: str
    written: tuple[Source, ...] | None = None
    unplaced: tuple[str, ...] = ()
    invented: tuple[str, ...] = ()
    partial: bool = False


async def _conclude(ls: CopyeditServer, progress: Progress, edited: Edited) -> dict:
    """Check a finished edit (cut short, syntax, unplaced parts, lost code, a stale document), then
    offer it to the client; what the command answers."""
    uri, document, version, text, result = edited.uri, edited.document, edited.version, edited.text, edited.result
    if progress.cancelled or result is None:
        if _unchanged(ls, uri, document, version, text):
            return CANCELLED
        _notify(ls, f"the edit was not applied: {DOCUMENT_CHANGED}", types.MessageType.Warning)
        return {"applied": False, "reason": DOCUMENT_CHANGED}  # a change of the document stopped it
    new_text = replace_region(text, edited.region, result.text)
    refusal, edits = await asyncio.to_thread(_checked_edits, edited, new_text, ls.settings.syntax_guard, _encoding(ls))
    if refusal is not None and refusal.kind == "code_lost" and result.loss and await take_loss(ls, result.loss):
        refusal = None  # the user reviews it hunk by hunk
    if not _unchanged(ls, uri, document, version, text):  # read last, on the loop: nothing can come between
        refusal = Refusal("stale_document")
    if refusal is not None:
        reason = refusal.message + _SERVER_HINTS.get(refusal.kind, "")
        progress.end(f"not applied: {reason}")
        _notify(ls, f"the edit was not applied: {reason}", types.MessageType.Warning)
        return {"applied": False, "reason": reason, "refusal": refusal.code, "text": new_text} | answer_of(result)
    provenance = None
    if edited.written is not None and len(edited.written) == len(split_lines(result.text)):  # an apply's review
        provenance = hunk_provenance(edits, edited.region.start, edited.written)
    answer = await _offer(ls, uri, edited.label, version, edits, result, provenance)
    done = f"{len(edits)} edits applied" if answer.applied else "the client did not apply the edit"
    if result.stats.fallback is not None:
        done += f" (a rewrite by the base model: {FALLBACKS[result.stats.fallback]})"
    progress.end(done)
    summary = {"applied": answer.applied, "edits": len(edits), "text": new_text} | answer_of(result)
    return summary | ({"hunks": answer.hunks} if answer.hunks is not None else {})


async def _offer(
    ls: CopyeditServer,
    uri: str,
    label: str,
    version: int | None,
    edits: list,
    result: EditResult,
    provenance: list[dict] | None = None,
) -> Applied:
    """Send ``edits`` of ``uri`` at ``version`` to the client, for review hunk by hunk where the
    settings ask for it or the result loses code; what the client answered.  An apply's
    ``provenance`` (each hunk's lines: from the file, the change or the model) goes into each
    hunk's description and, for the client's review, first as ``copyedit/provenance``."""
    identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
    change = types.TextDocumentEdit(text_document=identifier, edits=edits)
    reviews = ls.settings.reviews(workspace=False) or result.loss is not None  # code lost: hunk by hunk
    reviewed = reviews and supports_annotations(ls)
    descriptions = [describe_hunk(hunk) for hunk in provenance] if provenance else None
    workspace_edit = (
        hunk_review(change, label, descriptions) if reviewed else types.WorkspaceEdit(document_changes=[change])
    )
    if provenance and edits and reviewed:
        ls.protocol.notify(PROVENANCE_NOTIFICATION, {"uri": uri, "version": version, "hunks": provenance})
    return await apply_edit(ls, label, workspace_edit) if edits else Applied(True)


async def _chosen_region(
    ls: CopyeditServer, text: str, language: str | None, args: EditArguments, region: Region
) -> Region:
    """The region of the definition the model says a long document's instruction is about, else ``region``."""
    names = await asyncio.to_thread(choice_names, text, language, args.instruction or "")
    if not names:
        return region
    chosen = await ls.worker.choose(text, args.instruction or "", ls.settings, language=language or "", names=names)
    return await asyncio.to_thread(plan_region, text, language, args, chosen) if chosen else region


def _document_to_edit(ls: CopyeditServer, args: EditArguments | ApplyArguments, command: str = EDIT_COMMAND):
    """The open document ``args`` name, at the version they name and within maxFileBytes."""
    document = _open_document(ls, args.uri)
    if document is None:
        raise JsonRpcInvalidParams(f"{command}: {args.uri} is not an open document")
    if args.version is not None and document.version != args.version:
        raise JsonRpcInvalidParams(f"{command}: the document changed (version {document.version}, not {args.version})")
    _invalid_params(command, check_size, document.source, ls.settings.max_file_bytes)
    return document


@contextlib.contextmanager
def _editing(ls: CopyeditServer, uri: str, stop: threading.Event) -> Iterator[None]:
    """While an edit of ``uri`` runs, a change, close or open of that document stops it (its
    result could not be applied)."""
    ls.editing.setdefault(uri, set()).add(stop)
    try:
        yield
    finally:
        ls.editing[uri].discard(stop)
        if not ls.editing[uri]:
            del ls.editing[uri]


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: CopyeditServer, params: types.DidOpenTextDocumentParams) -> None:
    """``textDocument/didOpen``: a document opened again replaces the one an edit was made for."""
    _stop_edits_of(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: CopyeditServer, params: types.DidChangeTextDocumentParams) -> None:
    """``textDocument/didChange``: the edits running on the document are stopped."""
    _stop_edits_of(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: CopyeditServer, params: types.DidCloseTextDocumentParams) -> None:
    """``textDocument/didClose``: the edits running on the document are stopped."""
    _stop_edits_of(ls, params.text_document.uri)


def _stop_edits_of(ls: CopyeditServer, uri: str) -> None:
    for stop in ls.editing.get(uri, ()):
        stop.set()


# What the server adds to a refusal of a kind its settings can allow.
_SERVER_HINTS = {"syntax_worse": " (set syntaxGuard to false to allow it)"}


def _checked_edits(
    edited: Edited, new_text: str, guard: bool, encoding: str
) -> tuple[Refusal | None, list[types.TextEdit]]:
    """Why the edit must not be applied (:func:`~copyedit_lsp.decode.refusal.check`), and its minimal
    text edits where it may be (code it loses aside: the user may take it); run off the event loop
    (both parse the document)."""
    result, region = edited.result, edited.region
    assert result is not None
    taken = frozenset({"not_placed"} if edited.partial else ())
    refusal = check(edited.text, new_text, result, edited.language, unplaced=edited.unplaced,
                    invented=edited.invented, syntax_guard=guard, taken=taken)  # fmt: skip
    if refusal is not None and refusal.kind != "code_lost":
        return refusal, []
    return refusal, region_edits(edited.text, region.start, region.end, result.text, edited.program, encoding)


def _unchanged(ls: CopyeditServer, uri: str, document, version: int | None, text: str) -> bool:
    """Whether ``uri`` is still open as ``document`` (pygls makes a new one on every open) at
    ``version``, holding ``text``: a close and reopen at the same version is a change.  A file
    that was not open (``document`` None) is unchanged while it is not open with other text."""
    current = _open_document(ls, uri)
    if document is None:  # edited as read from disk: it must not have been opened since with other text
        return current is None or current.source == text
    return current is document and current.version == version and current.source == text


def _invalid_params(command: str, check, *args):
    """``check(*args)``, its ValueError an InvalidParams error that names ``command``."""
    try:
        return check(*args)
    except ValueError as error:
        raise JsonRpcInvalidParams(f"{command}: {error}") from None


async def _run_region(
    ls: CopyeditServer, region: Region, instruction: str, language: str | None, stop: threading.Event, on_progress=None
) -> EditResult:
    """The worker's edit of ``region``, stopped by ``stop``."""
    return await ls.worker.edit(
        region.source, instruction, ls.settings, language=language or "", stop=stop, on_progress=on_progress
    )


def _encoding(ls: CopyeditServer) -> str:
    return ls.workspace.position_encoding or types.PositionEncodingKind.Utf16


@server.command(REFACTOR_COMMAND)
async def refactor_workspace(ls: CopyeditServer, *arguments) -> dict:
    """``workspace/executeCommand`` ``copyedit.refactorWorkspace {instruction, include?, maxFiles?}``."""
    args = _command_arguments(REFACTOR_COMMAND, arguments, RefactorArguments)
    roots = _workspace_roots(ls)
    if not roots:
        raise JsonRpcInvalidParams(f"{REFACTOR_COMMAND}: the client opened no workspace folder")
    files, skipped = workspace_files(roots, args.include, args.maxFiles, max_bytes=ls.settings.max_file_bytes)
    edited: dict[str, tuple[types.TextDocumentEdit, Callable[[], bool]]] = {}  # by relative path (annotation id)
    async with work(ls, REFACTOR_COMMAND, "copyedit: refactor workspace") as progress:
        await progress.begin(f"{len(files)} files")
        for number, file in enumerate(files, 1):
            progress.report(
                f"file {number} of {len(files)}: {file.relative}", int(100 * (number - 1) / max(len(files), 1))
            )
            if (change := await _refactor_file(ls, file, args.instruction, progress.stop, skipped)) is not None:
                edited[file.relative] = change
    if progress.cancelled:
        return CANCELLED
    return await _apply_refactor(ls, args.instruction, len(files), edited, skipped, progress)


async def _apply_refactor(
    ls: CopyeditServer, instruction: str, files: int, edited: dict, skipped: list, progress: Progress
) -> dict:
    """One annotated ``workspace/applyEdit`` of the edited files still as they were edited; the others skipped."""
    fresh = {relative: same() for relative, (_, same) in edited.items()}
    skipped += [(relative, "changed while the refactor ran") for relative, ok in fresh.items() if not ok]
    changes = {relative: change for relative, (change, _) in edited.items() if fresh[relative]}
    if skipped:
        _notify(ls, "skipped " + "; ".join(f"{path}: {why}" for path, why in skipped), types.MessageType.Warning)
    confirm = ls.settings.reviews(workspace=True)
    annotations = {
        relative: types.ChangeAnnotation(label=relative, needs_confirmation=confirm, description=instruction)
        for relative in changes
    }
    workspace_edit = types.WorkspaceEdit(document_changes=list(changes.values()), change_annotations=annotations)
    applied = bool(changes) and (await apply_edit(ls, instruction, workspace_edit)).applied
    progress.end(f"{len(changes)} files changed")
    return {"applied": applied, "files": files, "changed": len(changes), "skipped": [p for p, _ in skipped]}


def _workspace_roots(ls: CopyeditServer) -> list[Path]:
    """The client's workspace folders, else its root path."""
    folders = [Path(to_fs_path(f.uri)) for f in ls.workspace.folders.values()]
    return folders or ([Path(ls.workspace.root_path)] if ls.workspace.root_path else [])


async def _refactor_file(
    ls: CopyeditServer, file: WorkspaceFile, instruction: str, stop: threading.Event, skipped: list
) -> tuple[types.TextDocumentEdit, Callable[[], bool]] | None:
    """The annotated edit of one file (the definitions the instruction names in it, else the whole
    file in top-level chunks that fit the context), and a check that the file is still as it was edited."""
    uri = from_fs_path(str(file.path))
    document = _open_document(ls, uri)
    text, version = (document.source, document.version) if document is not None else (file.text, None)
    language = language_for(document.language_id if document else None, str(file.path))
    lines = split_lines(text)
    edits: list[types.AnnotatedTextEdit] = []
    most = chunk_lines(ls.settings.n_ctx)
    scope = narrowed_scope(text, language, instruction)  # what the instruction names in this file, else all of it
    named = scope.kind != "document" and scope.end_line - scope.start_line <= most
    for start, end in [(scope.start_line, scope.end_line)] if named else top_level_chunks(text, language, most):
        region = Region(start, end, "".join(lines[start:end]), "chunk")
        try:
            result = await _run_region(ls, region, instruction, language, stop)
        except Cancelled:
            raise
        except Exception as error:  # this file is reported and left alone; the others go on
            skipped.append((file.relative, str(error)))
            return None
        refusal = check(text, replace_region(text, region, result.text), result, language,
                        syntax_guard=ls.settings.syntax_guard)  # fmt: skip
        if refusal is not None and refusal.kind != "unchanged":  # a chunk it leaves alone is no refusal
            skipped.append((file.relative, refusal.message))
            return None
        edits += [
            types.AnnotatedTextEdit(range=e.range, new_text=e.new_text, annotation_id=file.relative)
            for e in region_edits(text, region.start, region.end, result.text, result.program, _encoding(ls))
        ]
    if not edits:
        return None
    identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
    return types.TextDocumentEdit(text_document=identifier, edits=edits), lambda: _unchanged(
        ls, uri, document, version, text
    )


@server.command(CANCEL_COMMAND)
def cancel(ls: CopyeditServer, *arguments) -> dict:
    """``workspace/executeCommand`` ``copyedit.cancel``: stop every queued or running edit."""
    return {"cancelled": ls.worker.cancel_all()}


@server.feature(types.SHUTDOWN)
def shutdown(ls: CopyeditServer, params: None) -> None:
    """``shutdown``: stop the edits; the model is freed with the process."""
    ls.worker.cancel_all()


class _BoundedFormatter(logging.Formatter):
    """Log records cut to :data:`LOG_CHARS` characters, tracebacks included."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return text if len(text) <= LOG_CHARS else text[:LOG_CHARS] + f"... ({len(text) - LOG_CHARS} more characters)"


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``copyedit-lsp``: stdio by default, ``--tcp HOST:PORT`` too."""
    parser = argparse.ArgumentParser(prog="copyedit-lsp", description="The copyedit language server.")
    parser.add_argument("--version", action="version", version=f"copyedit-lsp {__version__}")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    parser.add_argument("--log-file", help="write the server's log here")
    args = parser.parse_args(argv)
    logging.basicConfig(filename=args.log_file, level=logging.INFO if args.log_file else logging.WARNING)
    for handler in logging.getLogger().handlers:  # no message is echoed whole
        handler.setFormatter(_BoundedFormatter("%(levelname)s:%(name)s:%(message)s"))
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
