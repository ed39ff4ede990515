"""Why an edit or an apply is not offered: one :class:`Refusal` of a kind (:data:`KINDS`), its
message written here once.  The front ends only map it: ``copyedit apply`` to an exit status,
the language server to the reason it answers and shows, the HTTP endpoint to a 400 and a code,
the benchmarks to a column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.loss import Loss
from ..core.scope import adds_syntax_errors
from .edit import CUTS, EditResult

DOCUMENT_CHANGED = "the document changed while the edit ran (or was closed or reopened); run it again"
UNCHANGED = (
    "the result is the code as it was: the model changed nothing (say the change more precisely, select "
    "the lines to change, or try another mode or model)"
)

# kind -> (the command line's exit status, the HTTP endpoint's error code, the message's opening),
# in the order a result is checked.
KINDS: dict[str, tuple[int, str, str]] = {
    "cut_short": (3, "cut_short", "the model's output was cut short"),
    "not_placed": (5, "not_placed", "a part of the change could not be placed"),
    "line_invented": (5, "line_invented", "the result writes lines in neither the file nor the change"),
    "syntax_worse": (5, "syntax_worse", "the result has more syntax errors than the original"),
    "unchanged": (6, "unchanged", UNCHANGED),
    "not_asked": (7, "not_asked", "the result is not what the instruction asks"),
    "code_lost": (4, "code_lost", "the edit loses code"),
    "stale_document": (8, "stale_document", DOCUMENT_CHANGED),
}


@dataclass(frozen=True)
class Refusal:
    """A result not offered: its kind (:data:`KINDS`) and what in it says why."""

    kind: str
    detail: str = ""

    @property
    def message(self) -> str:
        opening = KINDS[self.kind][2]
        return f"{opening}: {self.detail}" if self.detail else opening

    @property
    def exit_status(self) -> int:
        return KINDS[self.kind][0]

    @property
    def code(self) -> str:
        return KINDS[self.kind][1]


def check(
    before: str,
    after: str,
    result: EditResult,
    language: str | None,
    *,
    unplaced: Sequence[str] = (),
    invented: Sequence[str] = (),
    syntax_guard: bool = True,
    taken: frozenset[str] = frozenset(),
) -> Refusal | None:
    """Why ``after`` (``before`` with ``result`` in it) is not offered, the first of :data:`KINDS`
    that holds, or None: cut short, a part of an apply's change ``unplaced``, lines ``invented``,
    more syntax errors (with ``syntax_guard``), no change, not what the instruction asks, code
    lost; but for the kinds the user takes (``taken``: ``cut_short``, ``not_placed``,
    ``code_lost``)."""
    if result.cut is not None and "cut_short" not in taken:
        return Refusal("cut_short", CUTS[result.cut])
    if unplaced and "not_placed" not in taken:
        return Refusal("not_placed", "; ".join(unplaced))
    if invented:
        return Refusal("line_invented", ", ".join(repr(line) for line in invented[:3]))
    if syntax_guard and adds_syntax_errors(before, after, language):
        return Refusal("syntax_worse")
    if after == before:
        return Refusal("unchanged")
    if result.mismatch:
        return Refusal("not_asked", result.mismatch)
    if result.loss is not None and "code_lost" not in taken:
        return lost(result.loss)
    return None


def lost(loss: Loss) -> Refusal:
    """The refusal of a result that loses code (:mod:`~copyedit_lsp.core.loss`)."""
    return Refusal("code_lost", loss.describe())
