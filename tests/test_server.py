"""End-to-end: pytest-lsp drives the real server over stdio, with the real models."""

from __future__ import annotations

import ast
import asyncio
import json
import re
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from fixes import fix_problems
from lsprotocol import types
from mechanism import SETTINGS
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from texts import SHAPES, VARIANCE_SNIPPET

from copyedit_lsp.core.program import Copy, Gen, Program
from copyedit_lsp.core.resolver import resolve, split_lines
from copyedit_lsp.core.scope import adds_syntax_errors
from copyedit_lsp.decode.edit import CUTS
from copyedit_lsp.decode.refusal import UNCHANGED
from copyedit_lsp.serve.textedits import apply_lsp_edits

pytestmark = pytest.mark.model

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "copyedit_lsp.serve.server"])
# A server whose edits wait after their first progress report until the test creates this file.
RELEASE = Path(tempfile.mkdtemp(prefix="copyedit-hold-")) / "release"
HELD = ClientServerConfig(
    server_command=[sys.executable, str(Path(__file__).with_name("held_server.py")), str(RELEASE)]
)
TINY = {"model": "smollm2-135m", "nThreads": 2, "nCtx": 4096}

PYTHON = """import math


def area(radius):
    return math.pi * radius * 2


# copyedit: rename radius to r
def circumference(radius):
    return 2 * math.pi * radius
"""


async def start(client: LanguageClient, capabilities: str, options: dict, root: Path | None = None) -> None:
    """Initialize ``client`` as ``capabilities`` with ``options`` over the tests' model and mode
    (tests/mechanism.py): the product's defaults choose no model here."""
    client.applied = []
    client.answers = []  # what the client answers to each workspace/applyEdit (default: applied)
    client.ops = []  # copyedit/op notifications

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams):
        client.applied.append(params)
        return client.answers.pop(0) if client.answers else types.ApplyWorkspaceEditResult(applied=True)

    @client.feature("copyedit/op")
    def op(params) -> None:
        client.ops.append(params)

    client.provenance = []  # copyedit/provenance notifications

    @client.feature("copyedit/provenance")
    def provenance(params) -> None:
        client.provenance.append(params)

    client.asked = []  # window/showMessageRequest messages
    client.choices = []  # the action each one is answered with, by title (default: none taken)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def show_message_request(params: types.ShowMessageRequestParams):
        client.asked.append(params)
        return types.MessageActionItem(title=client.choices.pop(0)) if client.choices else None

    folders = [types.WorkspaceFolder(uri=root.as_uri(), name="ws")] if root else None
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(capabilities),
            initialization_options=SETTINGS | options,
            workspace_folders=folders,
            root_uri=root.as_uri() if root else None,
        )
    )


@pytest_lsp.fixture(config=SERVER, params=["neovim@v0.7.0", "visual-studio-code"])
async def tiny(request, lsp_client: LanguageClient):
    """A client of the server with the tiny model, as Neovim and as VS Code."""
    await start(lsp_client, request.param, TINY)
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=HELD, params=["neovim@v0.7.0", "visual-studio-code"])
async def held(request, lsp_client: LanguageClient):
    """A client of the server with the tiny model whose edits are held at their first progress
    report until :func:`release`: what the test does meanwhile happens at a known step."""
    RELEASE.unlink(missing_ok=True)
    await start(lsp_client, request.param, TINY)
    yield lsp_client
    RELEASE.touch()  # an edit still held goes on
    await lsp_client.shutdown_session()


async def release(client: LanguageClient, uri: str) -> None:
    """Let the held edit go on once the server has read every message sent before: it answers
    requests in order, so the answer to a code action on ``uri`` comes after them."""
    await code_actions(client, uri, 0)
    RELEASE.touch()


@pytest_lsp.fixture(config=SERVER)
async def qwen(lsp_client: LanguageClient):
    """A VS Code client of the server with the 0.5B."""
    await start(lsp_client, "visual-studio-code", {"nThreads": 2})
    yield lsp_client
    await lsp_client.shutdown_session()


def open_document(client: LanguageClient, uri: str, text: str, language: str = "python", version: int = 1) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id=language, version=version, text=text)
        )
    )


def nested_command(action) -> dict:
    """The command of a code action.  lsprotocol decodes a CodeAction that has a ``command`` key as
    a Command whose ``command`` field is the repr of the real command object: read it back."""
    assert isinstance(action, types.Command)
    return ast.literal_eval(action.command)


async def code_actions(client: LanguageClient, uri: str, line: int, diagnostics=()) -> list:
    cursor = types.Position(line=line, character=0)
    return await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=cursor, end=cursor),
            context=types.CodeActionContext(diagnostics=list(diagnostics)),
        )
    )


async def run_edit(client: LanguageClient, arguments: dict):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="copyedit.edit", arguments=[arguments])
    )


async def test_code_actions_of_each_kind(tiny):
    uri = "file:///tmp/shapes.py"
    open_document(tiny, uri, PYTHON)
    diagnostic = types.Diagnostic(
        range=types.Range(start=types.Position(line=4, character=4), end=types.Position(line=4, character=10)),
        message="area uses the diameter",
        code="E42",
        source="lint",
    )
    actions = await code_actions(tiny, uri, 7, [diagnostic])
    titles = [a.title for a in actions]
    assert titles == [
        "Fix with copyedit: area uses the diameter",
        "copyedit: rename radius to r",
        "Add docstring",
        "Add type hints",
        "Edit with instruction...",
    ]
    commands = [nested_command(a) for a in actions]
    assert all(
        c["command"] == "copyedit.edit" and c["title"] == a.title for a, c in zip(actions, commands, strict=False)
    )
    fix, comment, _, _, free = (c["arguments"][0] for c in commands)
    assert fix["instruction"] == "Fix this problem: area uses the diameter (E42)" and fix["range"]["start"]["line"] == 4
    assert comment["commentLine"] == 7 and comment["instruction"] == "rename radius to r"
    assert "instruction" not in free and free["version"] == 1

    open_document(tiny, "file:///tmp/greet.js", "function greet(name) {\n  return 'hi ' + name;\n}\n", "javascript")
    titles = [a.title for a in await code_actions(tiny, "file:///tmp/greet.js", 1)]
    assert titles == ["Add JSDoc comment", "Edit with instruction..."]


async def test_edit_applies_minimal_versioned_edits_equal_to_the_decoders_result(qwen):
    uri = "file:///tmp/stats.py"
    text = Path(__file__).parents[1].joinpath("examples", "stats.py").read_text()
    open_document(qwen, uri, text, version=7)
    cursor = types.Position(line=5, character=8)
    result = await run_edit(
        qwen,
        {"uri": uri, "range": {"start": vars_(cursor), "end": vars_(cursor)}, "instruction": "Fix the bug in mean."},
    )
    assert result["applied"] is True
    assert (
        result["stats"]["splicedTokens"] > 0 and result["stats"]["generatedTokens"] > 0 < result["stats"]["decodeSteps"]
    )
    # the live view: one copyedit/op per op as it closed, in order, then the end; they tile the program
    notices = [as_dict(n) for n in qwen.ops]
    assert [n["index"] for n in notices] == list(range(len(notices))) and notices[-1]["done"] is True
    assert all(n["uri"] == uri for n in notices) and notices[-1]["ops"] == len(notices) - 1 == result["stats"]["ops"]
    program = Program(tuple(op_of(n["op"], first_line=0) for n in notices[:-1]))
    old = split_lines(text)
    assert resolve(program, "".join(old[:6])) + "".join(old[6:]) == result["text"]
    # the default selector fixes the bug in one place, the docstring and the rest of the file kept
    assert fix_problems(text, result["text"], "mean", ([1, 2, 6],), 3.0) == [] and result["edits"] == 1
    (params,) = qwen.applied
    (change,) = params.edit.document_changes
    assert change.text_document.uri == uri and change.text_document.version == 7
    assert apply_lsp_edits(text, change.edits) == result["text"]
    # review (the default, "always"): each hunk is annotated and needs the user's confirmation
    assert [e.annotation_id for e in change.edits] == ["hunk-1"]
    assert params.edit.change_annotations["hunk-1"].needs_confirmation is True
    for edit in change.edits:  # no edit replaces a line by itself
        touched = "".join(old[edit.range.start.line : edit.range.end.line])
        assert edit.new_text != touched
    function_lines = range(0, 6)  # mean() is lines 0-5: nothing else may change
    assert all(e.range.start.line in function_lines and e.range.end.line <= 6 for e in change.edits)
    progress = [v for reports in qwen.progress_reports.values() for v in reports]
    assert any(isinstance(v, types.WorkDoneProgressReport) and "copied" in (v.message or "") for v in progress)


async def test_an_edit_without_a_range_edits_the_definition_its_instruction_names(qwen):
    """No range: the server edits the function the instruction names (``area``, lines 4-5), and
    nothing outside it."""
    uri = "file:///tmp/named.py"
    open_document(qwen, uri, PYTHON)
    result = await run_edit(qwen, {"uri": uri, "instruction": "Fix the bug in area: it should square the radius."})
    assert result["applied"] is True, result
    progress = [v for reports in qwen.progress_reports.values() for v in reports]
    begins = [v.message for v in progress if isinstance(v, types.WorkDoneProgressBegin)]
    assert "editing function area (lines 4-5)" in begins, begins
    (params,) = qwen.applied
    (change,) = params.edit.document_changes
    assert change.edits and all(3 <= e.range.start.line and e.range.end.line <= 5 for e in change.edits)
    head, tail = PYTHON[: PYTHON.index("def area")], PYTHON[PYTHON.index("\n\n# copyedit") :]
    assert result["text"] != PYTHON and result["text"].startswith(head) and result["text"].endswith(tail)


async def test_an_edit_that_changes_nothing_is_not_reported_as_applied(qwen):
    """Asked to leave a function as it is, the 0.5B writes it unchanged: the server sends
    no edit, answers applied false and says why (the progress's end and a message)."""
    uri = "file:///tmp/unchanged.py"
    text = "def add(a, b):\n    return a + b\n"
    open_document(qwen, uri, text)
    result = await run_edit(qwen, {"uri": uri, "instruction": "Leave add as it is."})
    assert result["applied"] is False and result["reason"] == UNCHANGED and result["text"] == text, result
    assert qwen.applied == [] and ended(qwen) == f"not applied: {UNCHANGED}"
    assert any(UNCHANGED in m.message for m in qwen.messages)


async def test_an_instruction_that_names_nothing_in_a_long_file_edits_what_the_model_chooses(qwen):
    """No range, a 96-line file, an instruction by its symptom that names no definition: the base
    model chooses ``parse_query`` among the file's definitions, and only its lines are edited."""
    from test_loss import ROUTER

    uri = "file:///tmp/router.py"
    open_document(qwen, uri, ROUTER)
    instruction = "Query strings lose everything after an equals sign in a value, like token=abc==."
    result = await run_edit(qwen, {"uri": uri, "instruction": instruction})
    progress = [v for reports in qwen.progress_reports.values() for v in reports]
    begins = [v.message for v in progress if isinstance(v, types.WorkDoneProgressBegin)]
    first = ROUTER[: ROUTER.index("def parse_query")].count("\n")
    assert f"editing function parse_query (lines {first + 1}-{first + 9})" in begins, begins
    head, tail = ROUTER[: ROUTER.index("def parse_query")], ROUTER[ROUTER.index("\n\n\ndef echo") :]
    assert result["text"].startswith(head) and result["text"].endswith(tail), result


def as_dict(params):
    """A notification's params as plain JSON values (pygls gives a custom method's as namedtuples)."""
    if hasattr(params, "_asdict"):
        return {key: as_dict(value) for key, value in params._asdict().items()}
    if isinstance(params, (list, tuple)):
        return [as_dict(value) for value in params]
    return params


def op_of(payload: dict, first_line: int):
    """The op a copyedit/op payload stands for, in the lines of the region that starts at ``first_line``."""
    if payload["kind"] == "copy":
        return Copy(payload["start"] - first_line + 1, payload["end"] - first_line)
    return Gen(payload["text"])


async def test_review_hunks_rejected_taken_or_not_asked_for(qwen):
    """review "always" (the default): every hunk its own annotation that needs confirmation; a
    client that rejects gets nothing applied and the command says so; one that takes hunks says
    which, and the command passes them on. review "never": plain text edits, no annotations."""
    uri = "file:///tmp/stats.py"
    text = Path(__file__).parents[1].joinpath("examples", "stats.py").read_text()
    open_document(qwen, uri, text)
    cursor = {"line": 3, "character": 0}
    arguments = {"uri": uri, "range": {"start": cursor, "end": cursor}, "instruction": "Fix the bug in mean."}
    qwen.answers.append(types.ApplyWorkspaceEditResult(applied=False, failure_reason="rejected in review"))
    rejected = await run_edit(qwen, arguments)
    assert rejected["applied"] is False and rejected["edits"] >= 1, rejected
    edit = qwen.applied[-1].edit
    (change,) = edit.document_changes
    ids = [e.annotation_id for e in change.edits]
    assert ids == [f"hunk-{k}" for k in range(1, len(ids) + 1)] == sorted(edit.change_annotations)
    assert all(a.needs_confirmation for a in edit.change_annotations.values())
    qwen.answers.append({"applied": True, "hunks": [1]})
    taken = await run_edit(qwen, arguments)
    assert taken["applied"] is True and taken["hunks"] == [1]
    qwen.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"review": "never"}))
    plain = await run_edit(qwen, arguments)
    (change,) = qwen.applied[-1].edit.document_changes
    assert plain["applied"] is True and "hunks" not in plain
    assert not qwen.applied[-1].edit.change_annotations and all(type(e) is types.TextEdit for e in change.edits)


def long_module(lines: int = 230) -> str:
    """A Python file of at most ``lines`` lines: correct HumanEvalFix solutions with their
    docstrings, then the demo's buggy mean() (230: about 220 lines and 1,530 tokens)."""
    from copyedit_lsp.common.datasets import data_dir

    stats = Path(__file__).parents[1].joinpath("examples", "stats.py").read_text()
    records = (json.loads(line) for line in (data_dir() / "humanevalfix" / "python.jsonl").open())
    parts: list[str] = []
    for record in records:
        code = (record["prompt"] + record["canonical_solution"]).strip("\n") + "\n"
        if sum(p.count("\n") + 2 for p in [*parts, code, stats]) > lines:
            break
        parts.append(code)
    return "\n\n".join([*parts, stats])


# The 0.5B model's program over a 250-line file, then its rewrite fallback (1,300 tokens): 52 s on a
# quiet 2-core machine, but 447 s beside another test run and 820 s beside a compile as well.
@pytest.mark.timeout(900)
async def test_a_whole_file_past_the_first_context_edits_with_the_default_settings(qwen):
    """The whole file selected: its prompt and text alone (about 4,560 tokens) do not fit a context
    of 4096, which the server says before decoding; with nCtx 0 (the default, which starts at
    4096) the same edit runs to its end and is applied, so the context grew to hold it. This checks
    the context, not the model: the 0.5B selector's programs for a whole file are often wrong, and
    the result may be its rewrite fallback (README, whole files), and may lose code: the user is
    then asked, and this client takes it to review."""
    uri = "file:///tmp/module.py"
    text = long_module(250)
    lines = text.count("\n")
    open_document(qwen, uri, text, version=4)
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": lines, "character": 0}}
    arguments = {"uri": uri, "range": everything, "instruction": "Fix the bug in mean."}
    # a fixed context of 4096 never grows: the edit is refused before decoding
    qwen.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"nCtx": 4096}))
    with pytest.raises(Exception, match="do not fit the model's context of 4096 tokens"):
        await run_edit(qwen, arguments)
    assert qwen.applied == []
    qwen.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"nCtx": 0}))
    qwen.choices = ["Review it anyway"]
    result = await run_edit(qwen, arguments)
    assert ("loss" in result) == bool(qwen.asked)  # asked exactly where the result loses code
    # nothing cut it short (the context, maxNewTokens, a gen's cap, a repeated gen), nor refused it
    assert result["applied"] is True, result.get("reason")
    assert result["edits"] >= 1 and result["text"] != text
    assert result["stats"]["splicedTokens"] > 0  # the program's copies were spliced after its prompt
    (params,) = qwen.applied
    (change,) = params.edit.document_changes
    assert change.text_document.uri == uri and change.text_document.version == 4
    assert len(change.edits) == result["edits"] and apply_lsp_edits(text, change.edits) == result["text"]


def vars_(position: types.Position) -> dict:
    return {"line": position.line, "character": position.character}


def _progress_token(client: LanguageClient) -> str | None:
    for token, reports in client.progress_reports.items():
        if (
            str(token).startswith("copyedit-")
            and not str(token).startswith("copyedit-load")
            and any(isinstance(r, types.WorkDoneProgressReport) for r in reports)
        ):
            return token
    return None


async def _edit_held_long(held: LanguageClient, uri: str) -> asyncio.Task:
    """Open ``LONG`` at ``uri`` and start an edit of all of it; the task, once the edit reports progress."""
    open_document(held, uri, LONG)
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": 48, "character": 0}}
    task = asyncio.create_task(
        run_edit(held, {"uri": uri, "range": everything, "instruction": "Add a docstring to f0."})
    )
    await _wait_for_progress(held)
    return task


async def _wait_for_progress(client: LanguageClient) -> str:
    for _ in range(600):
        token = _progress_token(client)
        if token is not None:
            return token
        await asyncio.sleep(0.05)
    raise AssertionError(f"no progress report arrived: {client.progress_reports} {client.messages}")


LONG = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(12))


async def test_progress_reports_figures_and_cancel_applies_nothing(held):
    uri = "file:///tmp/long.py"
    open_document(held, uri, LONG)
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": 48, "character": 0}}
    task = asyncio.create_task(
        run_edit(held, {"uri": uri, "range": everything, "instruction": "Rename x to value everywhere."})
    )
    token = await _wait_for_progress(held)
    begin = held.progress_reports[token][0]
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.cancellable
    held.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    await release(held, uri)
    result = await asyncio.wait_for(task, 60)
    assert result == {"applied": False, "reason": "cancelled"}
    assert held.applied == []
    assert isinstance(held.progress_reports[token][-1], types.WorkDoneProgressEnd)


async def test_cancel_request_stops_the_edit(held):
    uri = "file:///tmp/long2.py"
    open_document(held, uri, LONG)
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": 48, "character": 0}}
    future = held.protocol.send_request(
        types.WORKSPACE_EXECUTE_COMMAND,
        types.ExecuteCommandParams(
            command="copyedit.edit", arguments=[{"uri": uri, "range": everything, "instruction": "Rename x to y."}]
        ),
    )
    token = await _wait_for_progress(held)
    (request_id,) = [i for i, f in held.protocol._request_futures.items() if f is future]
    held.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=request_id))
    await release(held, uri)
    with pytest.raises(JsonRpcRequestCancelled):  # LSP's answer to a cancelled request
        await asyncio.wait_for(asyncio.wrap_future(future), 60)
    for _ in range(600):  # the server ends the progress once the decoder has stopped
        if isinstance(held.progress_reports[token][-1], types.WorkDoneProgressEnd):
            break
        await asyncio.sleep(0.05)
    assert held.progress_reports[token][-1].message == "cancelled: nothing applied"
    assert held.applied == []


async def test_a_stale_version_is_refused(held):
    uri = "file:///tmp/stale.py"
    task = await _edit_held_long(held, uri)
    held.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=LONG + "# typed meanwhile\n")],
        )
    )
    await release(held, uri)
    result = await asyncio.wait_for(task, 300)
    assert result["applied"] is False and "changed while the edit ran" in result["reason"]
    assert held.applied == []
    with pytest.raises(Exception, match="the document changed"):  # a stale version is refused up front too
        await run_edit(held, {"uri": uri, "version": 1, "instruction": "Anything."})


async def test_bad_requests_get_clear_errors_and_the_server_keeps_serving(tiny):
    uri = "file:///tmp/ok.py"
    open_document(tiny, uri, PYTHON)
    bad = [
        ([], "one argument object"),
        (["not an object"], "one argument object"),
        ([{"instruction": "x"}], "uri"),
        ([{"uri": uri, "instruction": "x", "range": {"start": {"line": "a"}}}], "invalid arguments"),
        ([{"uri": uri}], "no instruction"),
        ([{"uri": "file:///tmp/unknown.py", "instruction": "x"}], "not an open document"),
        (
            [
                {
                    "uri": uri,
                    "instruction": "x",
                    "range": {"start": {"line": 90, "character": 0}, "end": {"line": 99, "character": 0}},
                }
            ],
            "outside the document",
        ),
        ([{"uri": uri, "instruction": "x", "surprise": 1}], "surprise"),
    ]
    for arguments, message in bad:
        with pytest.raises(Exception, match=message):
            await asyncio.wait_for(
                tiny.workspace_execute_command_async(
                    types.ExecuteCommandParams(command="copyedit.edit", arguments=arguments)
                ),
                60,
            )
    actions = await code_actions(tiny, uri, 4)
    assert actions and actions[-1].title == "Edit with instruction..."


async def run_apply(client: LanguageClient, arguments: dict):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="copyedit.apply", arguments=[arguments])
    )


async def test_apply_refuses_a_change_it_cannot_place_with_a_clear_error_and_applies_nothing(tiny):
    """An empty change, markers only, another language's code, a search block found twice or
    nowhere, a diff of another file, a 5 MB change: each an error that says why; nothing reaches
    the client and the server keeps serving."""
    uri, twice = "file:///tmp/apply.py", "file:///tmp/twice.py"
    open_document(tiny, uri, PYTHON)
    open_document(tiny, twice, "def a():\n    return 1\n\n\ndef b():\n    return 1\n")
    block = "<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n"
    bad = [
        (uri, "", "the change is empty"),
        (uri, "# ... existing code ...\n# ...\n", "only elision markers"),
        (uri, "// ...\nfunction area(r) {\n  return Math.PI * r * r;\n}\n", "reads as javascript, not python"),
        (twice, block, r"block 1 \('return 1'\): matches 2 places \(lines 2, 6\)"),
        (uri, block, "block 1 .*matches nowhere in the file"),
        (uri, "--- a/other.py\n+++ b/other.py\n@@ -1,2 +1,2 @@\n import os\n-x = 1\n+x = 2\n", "hunk 1 .*nowhere"),
        (uri, "x = 1\n" * 900_000, "the change is larger than maxFileBytes"),
    ]
    for document, change, message in bad:
        with pytest.raises(Exception, match=message):
            await asyncio.wait_for(run_apply(tiny, {"uri": document, "change": change}), 120)
    assert tiny.applied == []
    actions = await code_actions(tiny, uri, 4)
    assert actions and actions[-1].title == "Edit with instruction..."


def open_stats(client: LanguageClient, uri: str) -> str:
    """Open ``examples/stats.py`` as ``uri``; its text."""
    text = Path(__file__).parents[1].joinpath("examples", "stats.py").read_text()
    open_document(client, uri, text)
    return text


async def test_apply_merges_blocks_reviewed_hunk_by_hunk_one_rejected(qwen):
    """Two search/replace blocks merged (placed once each: the merge answers): two hunks to
    confirm, the client takes the first only, and the file is the first change alone.  A snippet
    of two parts in so short a file, which the apply selector may place wrong, is offered only
    with every line right (a blank line may go: no guard sees it), else refused with why."""
    uri = "file:///tmp/stats_apply.py"
    text = open_stats(qwen, uri)
    blocks = (
        '<<<<<<< SEARCH\n    total = 0\n=======\n    if not values:\n        raise ValueError("no values")\n'
        "    total = 0\n>>>>>>> REPLACE\n<<<<<<< SEARCH\n    return sum((v - m) ** 2 for v in values) / len(values)\n"
        "=======\n    return sum((v - m) ** 2 for v in values) / (len(values) - 1)\n>>>>>>> REPLACE\n"
    )
    first = text.replace(
        "    total = 0\n", '    if not values:\n        raise ValueError("no values")\n    total = 0\n'
    )
    qwen.answers.append({"applied": True, "hunks": [1]})
    answer = await run_apply(qwen, {"uri": uri, "change": blocks})
    assert answer["applied"] is True and answer["hunks"] == [1] and answer["edits"] == 2, answer
    (change,) = qwen.applied[-1].edit.document_changes
    assert [e.annotation_id for e in change.edits] == ["hunk-1", "hunk-2"]
    assert all(a.needs_confirmation for a in qwen.applied[-1].edit.change_annotations.values())
    assert apply_lsp_edits(text, change.edits[:1]) == first
    assert "(len(values) - 1)" in apply_lsp_edits(text, change.edits)
    snippet = "def mean(values):\n    if not values:\n        return 0.0\n    total = 0\n# ... existing code ...\n"
    answer = await run_apply(qwen, {"uri": uri, "change": snippet})
    if answer["applied"]:  # the base model's lookup rewrite merged it: every line right (blank ones aside)
        expected = text.replace("    total = 0\n", "    if not values:\n        return 0.0\n    total = 0\n")
        assert [line for line in answer["text"].splitlines() if line.strip()] == [
            line for line in expected.splitlines() if line.strip()
        ]
    else:
        assert answer["reason"] and len(qwen.applied) == 1, answer


async def test_apply_merges_a_snippet_reviewed_hunk_by_hunk_one_rejected(qwen):
    """A lazy snippet that rewrites a function, placed by the code's structure (the function given
    whole replaces the file's; no model token): two hunks to confirm (the docstring, the return),
    the client takes the first only, and the file is the first alone, every other line as it was."""
    uri = "file:///tmp/stats_snippet.py"
    text = open_stats(qwen, uri)
    docstring = text.replace("the population variance", "the sample variance")
    qwen.answers.append({"applied": True, "hunks": [1]})
    answer = await run_apply(qwen, {"uri": uri, "change": VARIANCE_SNIPPET})
    assert answer["applied"] is True and answer["hunks"] == [1] and answer["edits"] == 2, answer
    assert answer["text"] == docstring.replace("/ len(values)\n", "/ (len(values) - 1)\n")
    assert answer["stats"]["outputTokens"] == answer["stats"]["decodeSteps"] == 0  # no model token
    (change,) = qwen.applied[-1].edit.document_changes
    assert [e.annotation_id for e in change.edits] == ["hunk-1", "hunk-2"]
    assert apply_lsp_edits(text, change.edits[:1]) == docstring
    # provenance, sent before the review: each hunk's one new line is the change's (its line 5, then
    # 7: the snippet's docstring and return), and each hunk says so in its description
    (sent,) = [as_dict(notice) for notice in qwen.provenance]
    assert sent["uri"] == uri and sent["version"] == 1
    assert sent["hunks"] == [{"removes": 1, "lines": [{"source": "change", "line": n}]} for n in (5, 7)]
    descriptions = [a.description for a in qwen.applied[-1].edit.change_annotations.values()]
    assert descriptions == ["1 line from the change; removes 1 line"] * 2


@pytest_lsp.fixture(config=SERVER)
async def workspace_client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    outside = tmp_path_factory.mktemp("outside")
    (root / "a.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "b.js").write_text("function sub(a, b) {\n  return a - b;\n}\n")
    (root / "pkg" / "c.ts").write_text("export function mul(a: number, b: number): number {\n  return a * b;\n}\n")
    (root / "data.bin.py").write_bytes(b"\x00\x01binary")
    (root / "latin1.py").write_bytes("caf\xe9 = 1\n".encode("latin-1"))
    (outside / "secret.py").write_text("SECRET = 1\n")
    (root / "link.py").symlink_to(outside / "secret.py")
    lsp_client.root = root
    lsp_client.outside = outside
    await start(lsp_client, "visual-studio-code", {"nThreads": 2}, root)
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_workspace_refactor_is_one_annotated_edit_inside_the_workspace(workspace_client):
    client = workspace_client
    secret_before = (client.outside / "secret.py").read_bytes()
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="copyedit.refactorWorkspace",
            arguments=[{"instruction": "Add a comment above the function that says what it does."}],
        )
    )
    assert result["files"] == 3
    assert sorted(result["skipped"]) == ["data.bin.py", "latin1.py", "link.py"]
    (params,) = client.applied
    changes = params.edit.document_changes
    assert len(changes) == result["changed"] == 3
    uris = {c.text_document.uri for c in changes}
    assert uris == {(client.root / p).as_uri() for p in ("a.py", "pkg/b.js", "pkg/c.ts")}
    annotations = params.edit.change_annotations
    assert set(annotations) == {"a.py", "pkg/b.js", "pkg/c.ts"}
    assert all(a.needs_confirmation for a in annotations.values())
    for change in changes:
        assert all(isinstance(e, types.AnnotatedTextEdit) and e.annotation_id in annotations for e in change.edits)
    assert (client.outside / "secret.py").read_bytes() == secret_before
    assert (client.root / "a.py").read_text() == "def add(a, b):\n    return a + b\n"  # the server writes nothing
    assert any("skipped" in m.message for m in client.messages)


@pytest_lsp.fixture(config=SERVER)
async def loading(lsp_client: LanguageClient):
    """A client whose server is still loading its model when the test starts."""
    await start(lsp_client, "visual-studio-code", {"nThreads": 2})
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_every_request_is_answered_while_the_model_loads(loading):
    """llama-cpp-python must not touch the server's stdout while it loads a model (it would lose replies)."""
    uri = "file:///tmp/loading.py"
    open_document(loading, uri, PYTHON)
    requests = [
        loading.workspace_execute_command_async(
            types.ExecuteCommandParams(command="copyedit.edit", arguments=[{"uri": uri}])
        )
        for _ in range(40)
    ]
    replies = await asyncio.wait_for(asyncio.gather(*requests, return_exceptions=True), 120)
    assert len(replies) == 40 and all("no instruction" in str(r) for r in replies)
    assert ended(loading, loading=True) is None  # every reply came while the model was still loading
    for _ in range(600):
        if ended(loading, loading=True) is not None:
            break
        await asyncio.sleep(0.1)
    ready = "model ready: qwen2.5-coder-0.5b.gguf on CPU, 2 threads"  # which model, and where it runs
    assert ended(loading, loading=True) == ready
    assert f"copyedit: {ready}" in [message.message for message in loading.log_messages]


@pytest.mark.parametrize("reopened", ["other text", "the same text"])
async def test_an_edit_of_a_closed_and_reopened_document_is_not_applied(held, reopened):
    """didClose and didOpen at the same version number while the edit runs: the edit was made for
    the document as it was, so no workspace/applyEdit is sent and the client is told why."""
    uri = "file:///tmp/reopened.py"
    task = await _edit_held_long(held, uri)
    held.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    open_document(held, uri, "import os\nimport sys\n" if reopened == "other text" else LONG, version=1)
    await release(held, uri)
    result = await asyncio.wait_for(task, 300)
    assert result["applied"] is False and "closed or reopened" in result["reason"]
    assert held.applied == []


async def test_an_edit_of_a_document_opened_again_is_not_applied(held):
    """A second didOpen of the document while the edit runs replaces it: nothing is applied."""
    uri = "file:///tmp/opened-twice.py"
    task = await _edit_held_long(held, uri)
    open_document(held, uri, "x = 1\n", version=1)
    await release(held, uri)
    result = await asyncio.wait_for(task, 300)
    assert result["applied"] is False and "closed or reopened" in result["reason"]
    assert held.applied == []


@pytest_lsp.fixture(config=SERVER)
async def short_budget(lsp_client: LanguageClient):
    """A VS Code client of the server rewriting with the tiny model and maxNewTokens 8."""
    await start(lsp_client, "visual-studio-code", TINY | {"mode": "rewrite", "maxNewTokens": 8})
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_an_output_cut_short_is_refused_with_why(short_budget):
    uri = "file:///tmp/cut.py"
    open_document(short_budget, uri, PYTHON)
    area = {"start": {"line": 3, "character": 0}, "end": {"line": 5, "character": 0}}
    result = await run_edit(short_budget, {"uri": uri, "range": area, "instruction": "Fix area."})
    assert result["applied"] is False and "cut short" in result["reason"] and "maxNewTokens" in result["reason"]
    assert short_budget.applied == []
    assert any("cut short" in m.message for m in short_budget.messages)


def ended(client: LanguageClient, *, loading: bool = False) -> str | None:
    """The message that ended the client's last edit's work-done progress, or with ``loading`` the
    model's loading progress (None: not ended)."""
    ends = [
        report.message
        for token, reports in client.progress_reports.items()
        if str(token).startswith("copyedit-") and str(token).startswith("copyedit-load-") == loading
        for report in reports
        if isinstance(report, types.WorkDoneProgressEnd)
    ]
    return ends[-1] if ends else None


@pytest_lsp.fixture(config=SERVER)
async def tiny_program(lsp_client: LanguageClient):
    """A VS Code client of the server with the tiny model in program mode without the rewrite
    fallback: the result is the tiny model's own program, which the server checks."""
    await start(lsp_client, "visual-studio-code", TINY | {"fallback": False})
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_a_repeated_gen_is_refused_with_why(tiny_program):
    """Asked to write a line again and again, the tiny model writes the same gen a third time: the
    decoder cuts the program there (a repeated gen), and the server applies nothing and says why."""
    uri = "file:///tmp/again.py"
    open_document(tiny_program, uri, "x = 1\n")
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}
    result = await run_edit(
        tiny_program, {"uri": uri, "range": everything, "instruction": "Write x = 1 again and again."}
    )
    why = f"the model's output was cut short: {CUTS['repeated']}"
    assert result["applied"] is False and result["reason"] == why, result
    assert result["text"].count("x = 1\n") >= 3  # the refused text: the line written over and over
    assert tiny_program.applied == []
    assert any(CUTS["repeated"] in m.message for m in tiny_program.messages)
    assert ended(tiny_program) == f"not applied: {why}"


ADD_JS = "function add(a, b) {\n  return a + b;\n}\n"
SYNTAX_REFUSAL = "the result has more syntax errors than the original (set syntaxGuard to false to allow it)"


async def test_a_result_with_more_syntax_errors_is_refused_with_why(tiny_program):
    """The tiny model's program for this function copies its first two lines and ends, leaving out
    the closing brace; nothing cut it short. The syntax guard refuses it and the client is told
    why; with syntaxGuard off the same edit is applied as it is (the guard, nothing else, refused it)."""
    uri = "file:///tmp/add.js"
    open_document(tiny_program, uri, ADD_JS, "javascript")
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}
    arguments = {"uri": uri, "range": everything, "instruction": "Subtract instead."}
    result = await run_edit(tiny_program, arguments)
    assert result["applied"] is False and result["reason"] == SYNTAX_REFUSAL, result
    assert adds_syntax_errors(ADD_JS, result["text"], "javascript")  # the refused text does parse worse
    assert tiny_program.applied == []
    assert any(SYNTAX_REFUSAL in m.message for m in tiny_program.messages)
    assert ended(tiny_program) == f"not applied: {SYNTAX_REFUSAL}"
    tiny_program.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"syntaxGuard": False}))
    unguarded = await run_edit(tiny_program, arguments)
    assert unguarded["applied"] is True and unguarded["text"] == result["text"]
    (params,) = tiny_program.applied
    (change,) = params.edit.document_changes
    assert apply_lsp_edits(ADD_JS, change.edits) == result["text"]


# The lost definitions the message names; the lines it counts are the tiny model's, which vary with
# the CPU's kernels.
LOSS = re.compile(
    r"the edit loses code: it drops (lines [\d-]+; )?area, perimeter \(\d+ lines\) that the instruction does not ask to drop"
)


async def test_an_edit_that_loses_code_is_offered_only_when_the_user_takes_it(tiny_program):
    """The tiny model's program for "Shorten describe." over all of shapes.py (a selection) writes
    ``describe`` where ``area`` and ``perimeter`` were (and breaks the syntax: the syntax guard is
    off, to see the loss guard alone).  The server asks the user, naming what is
    lost: "Discard" (or no answer) applies nothing and says why; "Review it anyway" sends the edit
    hunk by hunk, each to confirm, with the loss in the answer."""
    client = tiny_program
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"syntaxGuard": False}))
    uri = "file:///tmp/shapes.py"
    open_document(client, uri, SHAPES)
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": 15, "character": 0}}
    arguments = {"uri": uri, "range": everything, "instruction": "Shorten describe."}
    client.choices = ["Discard"]
    refused = await run_edit(client, arguments)
    assert refused["applied"] is False and LOSS.fullmatch(refused["reason"]), refused
    said = refused["reason"]
    assert refused["loss"]["definitions"] == ["area", "perimeter"] and "def area" not in refused["text"]
    (asked,) = client.asked
    assert asked.message == f"copyedit: {said}" and [a.title for a in asked.actions] == ["Review it anyway", "Discard"]
    assert client.applied == [] and ended(client) == f"not applied: {said}"
    unanswered = await run_edit(client, arguments)  # the user closed the message: no action
    assert unanswered["applied"] is False and unanswered["reason"] == said and len(client.asked) == 2
    client.choices = ["Review it anyway"]
    taken = await run_edit(client, arguments)
    assert taken["applied"] is True and taken["text"] == refused["text"] and taken["loss"] == refused["loss"]
    (params,) = client.applied
    (change,) = params.edit.document_changes
    assert apply_lsp_edits(SHAPES, change.edits) == taken["text"]
    assert all(a.needs_confirmation for a in params.edit.change_annotations.values())


@pytest_lsp.fixture(config=SERVER)
async def workspace_review(lsp_client: LanguageClient, tmp_path_factory):
    """A VS Code client of the server with the 0.5B, one file in its workspace folder, and
    review at "workspace"."""
    root = tmp_path_factory.mktemp("reviewed")
    (root / "a.py").write_text("def add(a, b):\n    return a + b\n")
    await start(lsp_client, "visual-studio-code", {"nThreads": 2, "review": "workspace"}, root)
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_review_workspace_has_the_refactor_confirmed_and_not_an_edit(workspace_review):
    """review "workspace": an ordinary edit's workspace/applyEdit is plain text edits, no change
    annotation to confirm (the client supports them); the workspace refactor's needs confirmation."""
    client = workspace_review
    uri = "file:///tmp/stats.py"
    text = Path(__file__).parents[1].joinpath("examples", "stats.py").read_text()
    open_document(client, uri, text)
    cursor = {"line": 3, "character": 0}
    edit = await run_edit(
        client, {"uri": uri, "range": {"start": cursor, "end": cursor}, "instruction": "Fix the bug in mean."}
    )
    assert edit["applied"] is True and edit["edits"] >= 1, edit
    (params,) = client.applied
    (change,) = params.edit.document_changes
    assert not params.edit.change_annotations and all(type(e) is types.TextEdit for e in change.edits)
    assert apply_lsp_edits(text, change.edits) == edit["text"]
    refactor = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="copyedit.refactorWorkspace",
            arguments=[{"instruction": "Add a comment above the function that says what it does."}],
        )
    )
    assert refactor["changed"] == 1 and refactor["applied"] is True, refactor
    params = client.applied[-1]
    (change,) = params.edit.document_changes
    assert params.edit.change_annotations["a.py"].needs_confirmation is True
    assert change.edits and all(
        isinstance(e, types.AnnotatedTextEdit) and e.annotation_id == "a.py" for e in change.edits
    )
