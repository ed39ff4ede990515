"""What the server sends the client with a finished edit: the versioned ``workspace/applyEdit``
(each hunk confirmed where the client reviews), the question whether to take an edit that loses
code, and the answer's stats."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from lsprotocol import types

from ..core.loss import Loss
from ..decode.edit import EditResult, EditStats
from ..decode.refusal import lost
from .protocol import FramedServer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Applied:
    """The client's answer to ``workspace/applyEdit``: applied or not, and the hunks it took where
    its review says (1-based indices of the text edits; None: not said)."""

    applied: bool
    hunks: list[int] | None = None


async def apply_edit(ls: FramedServer, instruction: str, edit: types.WorkspaceEdit) -> Applied:
    """``workspace/applyEdit``: whether the client applied ``edit``, and which hunks; logged."""
    request = f"copyedit-apply-{uuid.uuid4()}"
    ls.protocol.reviews[request] = None
    try:
        response = await ls.protocol.send_request_async(
            types.WORKSPACE_APPLY_EDIT,
            types.ApplyWorkspaceEditParams(label=f"copyedit: {instruction}", edit=edit),
            request,
        )
    finally:
        hunks = ls.protocol.reviews.pop(request, None)
    why = f" ({response.failure_reason})" if not response.applied and response.failure_reason else ""
    taken = f", hunks taken: {hunks}" if hunks is not None else ""
    log.info("workspace/applyEdit %s: applied: %s%s%s", request, str(response.applied).lower(), taken, why)
    return Applied(response.applied, hunks)


def hunk_review(
    change: types.TextDocumentEdit, instruction: str, descriptions: list[str] | None = None
) -> types.WorkspaceEdit:
    """``change`` as hunks the user confirms one by one: each text edit its own change annotation
    (``hunk-1``, ...) that needs confirmation, described by ``descriptions`` (else the instruction)."""
    annotations, annotated = {}, []
    for number, edit in enumerate(change.edits, 1):
        first, last = edit.range.start.line + 1, max(edit.range.end.line, edit.range.start.line + 1)
        label = f"hunk {number} of {len(change.edits)}: line {first}" + (f"-{last}" if last > first else "")
        description = descriptions[number - 1] if descriptions else instruction
        annotations[f"hunk-{number}"] = types.ChangeAnnotation(
            label=label, needs_confirmation=True, description=description
        )
        annotated.append(
            types.AnnotatedTextEdit(range=edit.range, new_text=edit.new_text, annotation_id=f"hunk-{number}")
        )
    document = types.TextDocumentEdit(text_document=change.text_document, edits=annotated)
    return types.WorkspaceEdit(document_changes=[document], change_annotations=annotations)


TAKE_LOSS, DISCARD = "Review it anyway", "Discard"


async def take_loss(ls: FramedServer, loss: Loss) -> bool:
    """Whether the user, asked (``window/showMessageRequest``), takes an edit that loses code to
    review; never without a client that can ask."""
    window = ls.client_capabilities.window
    if not (window and window.show_message):
        return False
    answer = await ls.window_show_message_request_async(
        types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=f"copyedit: {lost(loss).message}",
            actions=[types.MessageActionItem(title=TAKE_LOSS), types.MessageActionItem(title=DISCARD)],
        )
    )
    return answer is not None and answer.title == TAKE_LOSS


def supports_annotations(ls: FramedServer) -> bool:
    workspace = ls.client_capabilities.workspace
    return bool(workspace and workspace.workspace_edit and workspace.workspace_edit.change_annotation_support)


def stats_summary(stats: EditStats) -> dict:
    return {
        "ops": stats.ops,
        "generatedTokens": stats.chosen_tokens,
        "decodeSteps": stats.decode_steps,
        "splicedTokens": stats.spliced_tokens,
        "outputTokens": stats.output_tokens,
        "requests": stats.requests,  # to a remote server
        "seconds": round(stats.total_seconds, 3),
        "fallback": stats.fallback,  # why program mode's result gave way to a rewrite (edit.FALLBACKS), or None
    }


def answer_of(result: EditResult) -> dict:
    """What a finished edit reports besides whether it was applied: its stats, its program (where
    it has one), and the code it loses."""
    program = {"program": result.program.to_text()} if result.program is not None else {}
    return {"stats": stats_summary(result.stats)} | program | ({"loss": result.loss.to_dict()} if result.loss else {})
