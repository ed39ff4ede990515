"""Fast apply: a change an assistant wrote, merged into a file by the model's apply program and
checked before anyone is offered it.

Before the model runs, a change is refused (:class:`~copyedit_lsp.core.change.ChangeError`) whose code
is another language's, or whose search/replace blocks or diff hunks the deterministic merge
(:mod:`.merge`) finds nowhere or in more than one place (unless ``partial``: the rest is applied).
A snippet whose items structure places (:mod:`.structure`: by the definitions its code names) is
placed so, else by the merge's anchors.  Where the placement answers alone (:func:`answers_alone`)
no model runs; else its program is the decoder's draft (kept only where the model chooses the same
ops, so the result is the model's).  The result is then checked: every part of the change must show in it
(:func:`unplaced_parts`; else the apply is refused, or with ``partial`` taken with the parts
named), it may lose no code but what the change deletes on purpose
(:func:`~copyedit_lsp.core.loss.lost_code`), and it may parse no worse than the file (a misplaced
part often leaves a brace or a block unmatched).
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..core.change import Change, ChangeError
from ..core.loss import Loss, lost_code
from ..core.merge import Merged, merge, rewritten_in_place
from ..core.resolver import split_lines
from ..core.scope import LANGUAGES, syntax_errors
from ..core.structure import placements
from .edit import DecodeError, EditOptions, Editor, EditResult, EditStats, ProgressCallback, StopFlag, resembles
from .prompt import alike
from .refusal import Refusal, check


class ModelNeeded(ChangeError):
    """A change only the model merges (or chooses a placement of), asked of no model."""


# The refusals an apply's own result may meet; the rest (no change, not what was asked) are the caller's.
_APPLY_REFUSALS = frozenset({"cut_short", "not_placed", "line_invented", "syntax_worse", "code_lost"})


@dataclass(frozen=True)
class ApplyOutcome:
    """An apply's result (its ``loss`` the code it drops that the change does not delete) of the
    file ``before`` in ``language``, the parts of the change it lacks, the lines it writes that
    are in neither the file nor the change, and the deterministic merge it was drafted from."""

    result: EditResult
    unplaced: tuple[str, ...]
    merged: Merged
    before: str
    language: str | None
    invented: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Whether it may be offered as it is: none of the apply's refusals holds."""
        refusal = self.refusal()
        return refusal is None or refusal.kind not in _APPLY_REFUSALS

    def refusal(self, *, syntax_guard: bool = True, taken: frozenset[str] = frozenset()) -> Refusal | None:
        """Why the result must not be applied (:func:`~copyedit_lsp.decode.refusal.check`), or None."""
        return check(self.before, self.result.text, self.result, self.language, unplaced=self.unplaced,
                     invented=self.invented, syntax_guard=syntax_guard, taken=taken)  # fmt: skip


def apply_change(
    editor: Editor | None,
    text: str,
    change: Change,
    options: EditOptions,
    *,
    instruction: str = "",
    partial: bool = False,
    shortcut: bool = False,
    stop: StopFlag | None = None,
    on_progress: ProgressCallback | None = None,
) -> ApplyOutcome:
    """``change`` merged into ``text`` by ``editor``'s apply program, checked; raises
    :class:`~copyedit_lsp.core.change.ChangeError` for a change that cannot be applied.  With
    ``shortcut``, a change the merge places unambiguously (:func:`answers_alone`) is the merge's,
    without the model (its stats' mode says ``merge`` or ``structure``); without an ``editor``,
    a change that only the model would merge is refused."""
    other = other_language(change, text, options.language)
    if other is not None:
        raise ChangeError(f"the change's code reads as {other}, not {options.language}")
    structured = _structured(editor, text, change, options, instruction)
    if structured is not None and shortcut:  # structure's placement passes every check: it answers
        return structured
    merged = structured.merged if structured is not None else merge(text, change)  # else the anchors'
    anchored = [part for part in merged.unplaced if not part.startswith("part ")]  # blocks and hunks
    if anchored and (not partial or len(anchored) == len(change.pieces)):
        raise ChangeError("not placed: " + "; ".join(anchored))
    named = {part.split(": ", 1)[0] for part in anchored}
    if named:  # partial: the model gets the blocks or hunks the merge places
        placed = frozenset(n for n in range(1, len(change.pieces) + 1) if change.piece_name(n) not in named)
        full, change = change, change.keeping(placed)
        merged = merge(text, change)
    else:
        full = change
    if shortcut and answers_alone(change, merged) and merged.program is not None:
        result = EditResult(merged.program, merged.text, EditStats(mode=merged.placed_by))
    elif editor is None:
        raise ModelNeeded("neither its anchors nor the code's structure place it: only the model would merge it")
    else:
        result = editor.apply(
            text, change, options, instruction=instruction, plan=merged.program, stop=stop, on_progress=on_progress
        )
    return _checked(result, text, full, change, merged, options.language, instruction, anchored)


def _structured(
    editor: Editor | None, text: str, change: Change, options: EditOptions, instruction: str
) -> ApplyOutcome | None:
    """The placement of ``change`` (a snippet or a whole file) by the code's structure that passes
    every check: the only one, or where structure leaves a choice the one ``editor``'s model finds
    likeliest (its stats say among how many, by what margin); None where structure places none,
    or leaves a choice a backend cannot score (a completions server: its model merges it)."""
    passing = []
    for placed in placements(text, change, options.language) if change.form in ("snippet", "file") else ():
        by_structure = EditResult(placed.program, placed.text, EditStats(mode="structure"))
        outcome = _checked(by_structure, text, change, change, placed, options.language, instruction, ())
        if outcome.complete:
            passing.append(outcome)
    if len(passing) <= 1:
        return passing[0] if passing else None
    if editor is None:
        raise ModelNeeded(f"the code's structure leaves {len(passing)} placements: only the model chooses between them")
    try:
        scores = editor.rank(text, change, [o.result.text for o in passing], options, instruction)
    except DecodeError:
        return None
    first, second = sorted(range(len(passing)), key=lambda i: -scores[i])[:2]
    chosen = passing[first].result
    stats = replace(chosen.stats, candidates=len(passing), margin=scores[first] - scores[second])
    return replace(passing[first], result=replace(chosen, stats=stats))


def _checked(
    result: EditResult,
    text: str,
    full: Change,
    change: Change,
    merged: Merged,
    language: str,
    instruction: str,
    anchored: Sequence[str],
) -> ApplyOutcome:
    """``result``, ``change`` (of ``full``, less the ``anchored`` parts not placed) merged into
    ``text``: the code it loses, the parts it lacks, the lines it invents (its syntax is read with
    the rest of its refusal: :meth:`ApplyOutcome.refusal`)."""
    if result.cut is None:
        result = replace(result, loss=apply_loss(text, result.text, change, language, instruction, merged.deleted))
    named = {part.split(": ", 1)[0] for part in anchored}
    lacking = [part for part in unplaced_parts(full, text, result.text) if part.split(": ", 1)[0] not in named]
    return ApplyOutcome(
        result, (*anchored, *lacking), merged, text, language, invented_lines(text, result.text, change)
    )


def invented_lines(before: str, after: str, change: Change) -> tuple[str, ...]:
    """The lines of ``after`` (stripped, not blank) in neither ``before`` nor ``change``: a merge
    writes the file's lines and the change's, re-indented at most."""
    known = {line.strip() for line in split_lines(before)} | {line.text.strip() for line in change.lines}
    return tuple(dict.fromkeys(key for line in split_lines(after) if (key := line.strip()) and key not in known))


def answers_alone(change: Change, merged: Merged) -> bool:
    """Whether the merge's answer needs no model: search/replace blocks, diff hunks or a whole file
    (explicit anchors, never a snippet's guessed edges), every one placed once, or a snippet placed
    by structure (:mod:`.structure`)."""
    placed = merged.program is not None and not merged.unplaced
    return placed and (change.form != "snippet" or merged.placed_by == "structure")


def other_language(change: Change, text: str, language: str) -> str | None:
    """The language the change's code is written in where it is not ``language``: it parses
    without an error as another one, and with errors as ``language``, which ``text`` parses in
    without any."""
    if language not in LANGUAGES:
        return None
    code = textwrap.dedent("".join(line.text for line in change.lines if not line.marker))
    if not syntax_errors(code, language) or syntax_errors(text, language):
        return None
    return next(
        (other for other in ("python", "javascript") if other != language and not syntax_errors(code, other)), None
    )


def apply_loss(
    before: str,
    after: str,
    change: Change,
    language: str,
    instruction: str = "",
    replaced: frozenset[str] = frozenset(),
) -> Loss | None:
    """What ``after`` loses of ``before`` that ``change`` does not delete (nor ``replaced``, the
    lines of definitions it gives whole): the edit's loss (:func:`~copyedit_lsp.core.loss.lost_code`)
    and, stricter, every single line dropped (:func:`dropped_lines`), for a change says exactly
    what it replaces."""
    loss = lost_code(before, after, language, instruction, change.deleted() | replaced)
    dropped = dropped_lines(before, after, change, replaced)
    if not dropped:
        return loss
    runs: list[tuple[int, int]] = []
    for number in dropped:
        if runs and runs[-1][1] == number - 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    if loss is None:
        return Loss((), tuple(runs), len(dropped))
    return Loss(loss.definitions, tuple(sorted({*loss.runs, *runs})), max(loss.lines, len(dropped)))


def dropped_lines(before: str, after: str, change: Change, replaced: frozenset[str] = frozenset()) -> list[int]:
    """The lines of ``before`` (1-based, not blank) that ``after`` holds fewer times (whitespace
    aside) and that ``change`` neither deletes (:meth:`~copyedit_lsp.core.change.Change.deleted`, or
    ``replaced``) nor rewrites: none of its new lines (not the file's) reads like it, nor stands
    in a run the result rewrites in its place (:func:`~copyedit_lsp.core.merge.rewritten_in_place`)."""
    old, result = split_lines(before), split_lines(after)
    held = Counter(line.strip() for line in result if line.strip())
    known = {line.strip() for line in old}
    new = [key for line in change.lines if not line.marker and (key := line.text.strip()) and key not in known]
    deleted = change.deleted() | replaced
    dropped = []
    for number, line in enumerate(old, 1):
        key = line.strip()
        if not key:
            continue
        if held[key] > 0:
            held[key] -= 1
        elif key not in deleted and not any(resembles(key, written) for written in new):
            dropped.append(number)
    if dropped:
        in_place = rewritten_in_place(old, result)
        dropped = [number for number in dropped if number - 1 not in in_place]
    return dropped


def unplaced_parts(change: Change, before: str, after: str) -> tuple[str, ...]:
    """The parts of ``change`` (:meth:`~copyedit_lsp.core.change.Change.parts`) that ``after``, the
    result of applying it to ``before``, does not show: a line of the part missing (whitespace
    aside), for a part that only deletes, its lines as often in ``after`` as in ``before``, a new
    line placed beside the file line it rewrites, which stays (:func:`kept_rewritten`), or the
    part's lines split apart (:func:`_together`: a line dropped or put between them)."""
    have = set(_stripped(after))
    missing = []
    for name, lines, replaced in change.parts():
        wanted = [line for line in _stripped("".join(lines)) if line]
        if wanted:
            gone = [line for line in wanted if line not in have]
            if gone:
                missing.append(
                    f"{name}: the result lacks {gone[0]!r}" + (f" and {len(gone) - 1} more" if len(gone) > 1 else "")
                )
            elif kept := kept_rewritten(wanted, change, before, after):
                missing.append(f"{name}: the result keeps {kept[1]!r} beside {kept[0]!r}, which reads as its rewrite")
            elif not _together(lines, after):
                missing.append(f"{name}: its lines do not stand together in the result as the change has them")
        elif _count(replaced, before) <= _count(replaced, after):
            missing.append(f"{name}: what it deletes is still there")
    if change.pieces and not missing and (off := miscounted(change, before, after)):
        missing.append(f"the result holds {off[0]!r} {off[1]} times where the change makes it {off[2]}")
    return tuple(missing)


def miscounted(change: Change, before: str, after: str) -> tuple[str, int, int] | None:
    """A line of ``change``'s blocks or hunks (stripped, not blank) that ``after`` does not hold
    as often as ``before`` less the anchors plus the replacements (the count every exact merge
    of blocks or hunks gives: not so, a line kept beside its replacement, or written twice), with
    how often it is held and should be; or None."""
    removed, added = Counter[str](), Counter[str]()
    for piece, (_, lines, _) in zip(change.pieces, change.parts(), strict=True):
        removed.update(key for line in piece.anchor if (key := line.strip()))
        added.update(key for line in lines if (key := line.strip()))
    old, new = Counter(_stripped(before)), Counter(_stripped(after))
    wanted = {key: old[key] - removed[key] + added[key] for key in removed | added}
    return next(((key, new[key], count) for key, count in wanted.items() if new[key] != count), None)


def kept_rewritten(wanted: Sequence[str], change: Change, before: str, after: str) -> tuple[str, str] | None:
    """A new line of ``wanted`` (stripped, in no line of ``before``) placed right beside a line
    of ``before`` it reads like (:func:`~copyedit_lsp.decode.prompt.alike`, the model's ``~N`` hint) that
    ``change`` does not show, where ``after`` still holds every line of ``before`` it reads like,
    as often: a line inserted where the change rewrites one, the rewritten line kept; or None."""
    old = Counter(_stripped(before))
    result = _stripped(after)
    held, shown = Counter(result), {line.text.strip() for line in change.lines}
    candidates = [key for key in old if key]
    for line in (line for line in wanted if line not in old):
        for at in (at for at, key in enumerate(result) if key == line):
            near = [key for key in result[max(at - 1, 0) : at] + result[at + 1 : at + 2] if key and key in old]
            beside = [key for key in near if alike(line, [key])]  # the lines beside it first: few
            if beside and beside[0] not in shown:
                rewritable = [candidates[at] for _, at in alike(line, candidates)]
                if all(held[key] >= old[key] for key in rewritable):  # none of those it reads like rewritten
                    return line, beside[0]
                break
    return None


def _stripped(text: str) -> list[str]:
    return [line.strip() for line in split_lines(text)]


def _together(run: Sequence[str], text: str) -> bool:
    """Whether the lines ``run`` stand together in ``text`` in this order, whitespace aside and a
    run of blank lines as good as one (where the run begins and ends with any, as good as none)."""
    return _occurrences(_shape(_stripped("".join(run))), _shape(_stripped(text), trim=False)) > 0


def _shape(lines: list[str], trim: bool = True) -> list[str]:
    """``lines`` with each run of blank lines made one (``trim``: none at either end)."""
    shaped = [line for at, line in enumerate(lines) if line or (at and lines[at - 1])]
    while trim and shaped and not shaped[0]:
        shaped.pop(0)
    while trim and shaped and not shaped[-1]:
        shaped.pop()
    return shaped


def _count(run: Sequence[str], text: str) -> int:
    """How often the lines ``run`` (whitespace aside, blank lines skipped) stand together in ``text``."""
    want = [line for line in (line.strip() for line in run) if line]
    return _occurrences(want, [line for line in _stripped(text) if line])


def _occurrences(want: list[str], lines: list[str]) -> int:
    """How often ``want`` (not empty) stands together in ``lines``; 0 for an empty ``want``."""
    return sum(lines[i : i + len(want)] == want for i in range(len(lines) - len(want) + 1)) if want else 0
