"""A training sequence: the program prompt and the oracle program exactly as the decoder runs them.

The answer is laid out token by token the way :class:`~copyedit_lsp.decode.decoder.Decoder` puts it in
the context: each op's pieces tokenized apart (the op opening, single-token digits, the dash and
``"/>\\n``), a copy's lines spliced after its tag as :meth:`SourceView.span` gives them, a gen's
body and ``</gen>`` as the model writes them.  Only the tokens the model *chooses* at inference
carry loss: where the op trie branches, digits where the digit mask leaves more than one, gen
bodies and their ``</gen>``.  Forced pieces and spliced lines are context, never targets.  A
test checks the layout against the real decoder's forced mode, token for token.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.change import Change
from ..core.grammar import copy_reach, copyable_from, digit_choices
from ..core.program import GEN_CLOSE, ChangeCopy, Copy, Gen, Program, op_kind
from ..core.resolver import joined, split_lines
from ..decode.prompt import SourceView, as_model_sees, change_view
from ..decode.tokens import ProgramTokens

Tokenize = Callable[[str], list[int]]


@dataclass
class TrainingSequence:
    """Token ids and, for each, whether the model chooses it at inference (the loss mask)."""

    tokens: list[int] = field(default_factory=list)
    chosen: list[bool] = field(default_factory=list)

    def add(self, tokens: list[int], chosen: bool) -> None:
        self.tokens += tokens
        self.chosen += [chosen] * len(tokens)

    @property
    def targets(self) -> int:
        return sum(self.chosen)


def answer_sequence(
    program: Program,
    source: str,
    tokenize: Tokenize,
    piece: Callable[[int], bytes],
    *,
    ordered: bool = True,
    change: Change | None = None,
) -> TrainingSequence:
    """The answer after ``<program>\\n``: every op and ``</program>`` with the loss mask of inference.

    ``ordered``: copies may start only after the previous copy (the decoder's ordered constraint);
    ``change``: an apply program's change, whose lines its change copies splice (always in order)."""
    pieces = ProgramTokens.of(tokenize)
    views = {Copy: SourceView.of(source), ChangeCopy: change_view(change) if change is not None else SourceView(())}
    first = {Copy: 1, ChangeCopy: 1}
    skip = {Copy: frozenset[int](), ChangeCopy: change.markers if change is not None else frozenset[int]()}
    sequence = TrainingSequence()
    for op in (*program.ops, None):
        kinds = pieces.openings(
            file=first[Copy] <= len(views[Copy].lines),
            change=copyable_from(skip[ChangeCopy], first[ChangeCopy], len(views[ChangeCopy].lines)),
        )
        _walk(sequence, kinds, op_kind(op))
        if op is None:
            break
        if isinstance(op, Copy | ChangeCopy):
            view, markers = views[type(op)], skip[type(op)]
            _number(sequence, pieces, op.start, first[type(op)], len(view.lines), pieces.dash, markers)
            reach = copy_reach(markers, op.start, len(view.lines))
            _number(sequence, pieces, op.end, op.start, reach, pieces.copy_close)
            sequence.add(tokenize(view.span(op.start, op.end)), chosen=False)
            first[type(op)] = op.end + 1 if ordered or isinstance(op, ChangeCopy) else 1
        else:
            _gen_body(sequence, pieces, tokenize(as_model_sees(op.text) + GEN_CLOSE), piece)
    return sequence


def widened(program: Program, source: str, lines: int) -> Program:
    """``program`` with every change begun up to ``lines`` lines earlier: the last lines of a copy
    that a gen or a deletion follows move into a gen of their own text (the result is the same).

    A selector trained on such programs ends its copies short of what it will change, so a copy
    end one line late still leaves the changed line to the gen, and the gen writes the lines
    before the change the way a rewrite does."""
    text = split_lines(source)
    ops: list[Copy | Gen] = []
    for index, op in enumerate(program.ops):
        after = program.ops[index + 1] if index + 1 < len(program.ops) else None
        if isinstance(op, Gen) or after is None or isinstance(after, Copy) and after.start == op.end + 1 or lines <= 0:
            ops.append(op)
            continue
        kept = max(op.start - 1, op.end - lines)
        if kept >= op.start:
            ops.append(Copy(op.start, kept))
        ops.append(Gen("".join(text[kept : op.end])))
    return Program(tuple(joined(ops)))


def _walk(sequence: TrainingSequence, kinds: dict[str, list[int]], kind: str) -> None:
    """An op's opening: chosen where the remaining openings differ, forced where they agree."""
    alive = dict(kinds)
    tokens = kinds[kind]
    for depth, token in enumerate(tokens):
        branches = {t[depth] for t in alive.values() if depth < len(t)}
        sequence.add([token], chosen=len(alive) > 1 and len(branches) > 1)
        alive = {k: t for k, t in alive.items() if depth < len(t) and t[depth] == token}


def _number(
    sequence: TrainingSequence,
    pieces: ProgramTokens,
    value: int,
    lo: int,
    hi: int,
    terminator: list[int],
    skip: frozenset[int] = frozenset(),
) -> None:
    """A line number's digits under the digit mask, then its terminator."""
    prefix = ""
    for char in (*str(value), ""):
        digits, can_end = digit_choices(prefix, lo, hi, skip)
        options = len(digits) + can_end
        token = pieces.digit[char] if char else terminator[0]
        sequence.add([token], chosen=options > 1)
        prefix += char
    sequence.add(terminator[1:], chosen=False)


def _gen_body(
    sequence: TrainingSequence, pieces: ProgramTokens, tokens: list[int], piece: Callable[[int], bytes]
) -> None:
    """A gen body and its ``</gen>`` as the model writes them; the decoder forces the line break after."""
    body = b""
    for index, token in enumerate(tokens):
        body += piece(token)
        close = body.find(b"</gen>")
        if close < 0:
            continue
        rest = body[close + 6 :]
        if rest == b"\n":
            sequence.add(tokens[: index + 1], chosen=True)
        elif not rest:
            sequence.add(tokens[: index + 1], chosen=True)
            sequence.add(pieces.newline, chosen=False)
        else:
            raise ValueError("a gen's </gen> shares a token with what follows it")
        return
    raise ValueError("a gen body without </gen>")
