"""The local decoder's token machinery: the tokens of one edit, the pieces the grammar allows,
and line numbers written digit by digit.

A :class:`TokenRun` holds what is pending, what is drafted ahead and the logits; a
:class:`PieceTrie` walks the token sequences of alternative pieces, choosing only where they
branch; :func:`write_number` writes a line number under the digit mask of
:func:`~copyedit_lsp.core.grammar.digit_choices`.
"""

from __future__ import annotations

import bisect
import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..core import program
from ..core.grammar import digit_choices
from ..core.program import CHANGE_COPY_OPEN, COPY_CLOSE, COPY_OPEN, GEN_CLOSE, GEN_OPEN, PROGRAM_CLOSE, unescape
from .edit import ContextOverflow, DecodeError, EditOptions, EditWatch

if TYPE_CHECKING:
    from .llama_model import LlamaModel


# Copied tokens the copy check evaluates at a time, with logits before each judged one: on CPU a
# batch of 64 costs per token what one of 256 does, and a doubt throws away the rest of its batch.
CHECK_CHUNK = 64


@dataclass(frozen=True)
class ProgramTokens:
    """The token ids of the program's fixed pieces in one model's vocabulary."""

    ops: dict[str, list[int]]  # "copy", "gen", "end": the opening of each op of an edit program
    change_copy: list[int]  # the opening of a change copy (apply programs: ``apply_ops``)
    digit: dict[str, int]  # "0".."9" -> its single token
    dash: list[int]
    copy_close: list[int]
    gen_close: list[int]
    gen_close_starts: list[int]  # the single tokens a ``</gen>`` can begin with ("<", "</", ...)
    newline: list[int]

    @classmethod
    def of(cls, tokenize: Callable[[str], list[int]]) -> ProgramTokens:
        digits = {c: tokenize(c) for c in "0123456789"}
        if any(len(t) != 1 for t in digits.values()):
            raise DecodeError("the model's tokenizer has no single-token digits")
        return cls(
            ops={"copy": tokenize(COPY_OPEN), "gen": tokenize(GEN_OPEN), "end": tokenize(PROGRAM_CLOSE)},
            change_copy=tokenize(CHANGE_COPY_OPEN),
            digit={c: t[0] for c, t in digits.items()},
            dash=tokenize("-"),
            copy_close=tokenize(COPY_CLOSE),
            gen_close=tokenize(GEN_CLOSE),
            gen_close_starts=sorted(
                {t[0] for t in (tokenize(GEN_CLOSE[:k]) for k in range(1, len(GEN_CLOSE))) if len(t) == 1}
            ),
            newline=tokenize("\n"),
        )

    def openings(self, *, file: bool, change: bool) -> dict[str, list[int]]:
        """The openings of the ops that may come next: a file copy where ``file``, a change copy
        where ``change`` (an apply program with change lines left), a gen and the end."""
        found = {kind: tokens for kind, tokens in self.ops.items() if file or kind != "copy"}
        return found | {"change": self.change_copy} if change else found

    def number(self, value: int) -> list[int]:
        return [self.digit[c] for c in str(value)]

    def copy_tag(self, start: int, end: int, *, change: bool = False) -> list[int]:
        """``<copy lines="start-end"/>`` (``change``: ``<copy change="start-end"/>``)."""
        opening = self.change_copy if change else self.ops["copy"]
        return [*opening, *self.number(start), *self.dash, *self.number(end), *self.copy_close]


def body_text(body: bytes) -> str:
    """A gen body's bytes as the text it stands for."""
    return unescape(body.decode("utf-8", errors="replace"))


#: :data:`~copyedit_lsp.core.program.UNESCAPED_OPENINGS` as the bytes a gen's body is read in (the
#: grammar's line states rule them out too).
UNESCAPED_OPENINGS = tuple(opening.encode() for opening in program.UNESCAPED_OPENINGS)
#: The one the local decoder reads where a line starts: the gen closed and a new one opened.
REOPEN = b"<gen>"


def _opening_begun(body: bytes) -> tuple[bytes, bool]:
    """The end of ``body`` that begins an unescaped opening ("<", "<ge", "</prog", ...), or b"";
    and whether that end (or the next token, when it is b"") begins a line after the first."""
    at = body.rfind(b"<")
    tail = body[at:] if at >= 0 else b""
    begun = tail if any(opening.startswith(tail) for opening in UNESCAPED_OPENINGS) else b""
    before = body[: len(body) - len(begun)]
    return begun, before.endswith((b"\n", b"\r"))


class OpeningMask:
    """The tokens that would complete an unescaped opening in a gen's body, by what the body ends
    with: the decoder's form of the grammar's line states, one vocabulary scan per state met.
    Where a line after the first starts, :data:`REOPEN` is left open (the decoder reads it)."""

    def __init__(self, pieces: Sequence[bytes]):
        self.pieces = pieces
        self._order = sorted(range(len(pieces)), key=pieces.__getitem__)
        self._sorted = [pieces[token] for token in self._order]
        self._with_lt = [token for token, piece in enumerate(pieces) if b"<" in piece]
        self._masks: dict[tuple[bytes, bool], list[int]] = {}

    def excluded(self, body: bytes) -> list[int]:
        """The tokens ``body`` may not be followed by."""
        state = _opening_begun(body)
        mask = self._masks.get(state)
        if mask is None:
            mask = self._masks[state] = self._scan(*state)
        return mask

    def _starting_with(self, head: bytes) -> list[int]:
        lo = bisect.bisect_left(self._sorted, head)
        hi = bisect.bisect_left(self._sorted, head[:-1] + bytes([head[-1] + 1]))  # heads are ASCII
        return self._order[lo:hi]

    def _scan(self, begun: bytes, line_start: bool) -> list[int]:
        candidates = set(self._with_lt)  # an opening within the token
        for k in range(len(begun)):  # or one begun in the body and completed by the token
            for opening in UNESCAPED_OPENINGS:  # (one the body already holds whole, REOPEN, needs no token)
                if opening.startswith(begun[k:]) and len(begun) - k < len(opening):
                    candidates.update(self._starting_with(opening[len(begun) - k :]))
        return sorted(t for t in candidates if _completes(begun + self.pieces[t], line_start))


def _completes(text: bytes, line_start: bool) -> bool:
    """Whether ``text`` holds an unescaped opening other than :data:`REOPEN` where a line starts
    (``line_start``: ``text`` itself starts one)."""
    for opening in UNESCAPED_OPENINGS:
        at = text.find(opening)
        while at >= 0:
            starts_line = line_start if at == 0 else text[at - 1 : at] in (b"\n", b"\r")  # not the gen's first
            if opening != REOPEN or not starts_line:
                return True
            at = text.find(opening, at + 1)
    return False


def reopening(body: bytes, since: int) -> int:
    """Where :data:`REOPEN` begins a line of ``body`` other than its first, at or after ``since``, or -1."""
    at = body.find(REOPEN, max(since, 1))
    while at >= 0 and body[at - 1 : at] not in (b"\n", b"\r"):
        at = body.find(REOPEN, at + 1)
    return at


class TokenRun:
    """The state of one edit: pending tokens, drafted tokens ahead, logits, counters, the stop flag.

    The current position is the end of the cache plus the pending tokens, which are evaluated
    only when logits are needed.  A draft is evaluated at once with logits at every drafted
    position and stays in the cache *ahead* of the current position: each token the decoder
    then forces or chooses either matches the draft's next token (its logits are already
    there: no step) or replaces the rest of the draft, which leaves the cache.
    """

    def __init__(self, llama: LlamaModel, watch: EditWatch, *, force: bool, batch: bool):
        self.llama = llama
        self.watch = watch
        self.stats = watch.stats
        self.free_forced = force
        self.batch = batch
        self.pending: list[int] = []
        self.pending_splice = 0  # how many pending tokens are spliced text
        self.logits: np.ndarray | None = None  # after the last cached token, valid when nothing is pending
        self.ahead: list[int] = []  # drafted tokens in the cache past the current position
        self.ahead_logits: list[np.ndarray | None] = []  # the logits after each of them (None: not asked for)
        self.budget = 0  # tokens this edit may choose
        self.cut: str | None = None  # why the output was cut short (edit.CUTS), if it was

    def prefill(self, tokens: list[int]) -> None:
        self.watch.check_stop()
        started = time.perf_counter()
        calls = self.llama.counters.calls
        self.logits, reused = self.llama.prefill(tokens)
        self.stats.prefill_tokens += len(tokens) - reused
        self.stats.prefix_reused_tokens += reused
        self.stats.eval_calls += self.llama.counters.calls - calls
        self.stats.prefill_seconds += time.perf_counter() - started

    def _take(self, token: int) -> None:
        """Put ``token`` at the current position: the draft's next token, or a pending one."""
        if self.ahead:
            if self.ahead[0] == token:
                self.ahead.pop(0)
                self.logits = self.ahead_logits.pop(0)
                self.stats.accepted_tokens += 1
                return
            self._drop_draft()
        self.pending.append(token)

    def _drop_draft(self) -> None:
        self.llama.truncate(len(self.llama.cached) - len(self.ahead))
        self.ahead, self.ahead_logits = [], []

    def force(self, tokens: Sequence[int]) -> None:
        """Tokens the grammar leaves no choice about: fed with the next evaluation (``force``), or
        each at the cost of a step; with ``batch`` off, a piece is evaluated on its own."""
        self.stats.forced_tokens += len(tokens)
        if not self.batch:
            self.flush()
        for token in tokens:
            if not self.free_forced:
                self.flush()
            self._take(token)

    def splice(self, tokens: Sequence[int]) -> None:
        """A closed copy's lines: evaluated in one batch with what is pending around them."""
        self._count_splice(tokens)
        if not self.batch:
            self.flush()
        before = len(self.pending)
        for token in tokens:
            self._take(token)
        self.pending_splice += len(self.pending) - before
        if not self.batch:
            self.flush()

    def checked_splice(
        self, tokens: Sequence[int], doubts: Callable[[np.ndarray, int], bool], checked: Sequence[bool]
    ) -> int | None:
        """A closed copy's lines evaluated in batches of :data:`CHECK_CHUNK` with logits before
        every ``checked`` token and after the last, each batch's tokens taken while the model does
        not ``doubt`` them (``doubts(logits, token)``) before the next is evaluated; return the index
        of the first doubted token (it and the rest of its batch stay ahead of the current position,
        the rest of the copy is never evaluated), or None when all were taken."""
        if self.ahead:
            self._drop_draft()
        self._count_splice(tokens)
        for offset in range(0, len(tokens), CHECK_CHUNK):
            chunk = tokens[offset : offset + CHECK_CHUNK]
            self.pending_splice = len(chunk)
            self._eval(chunk, checked[offset : offset + CHECK_CHUNK])
            for index, token in enumerate(chunk, offset):
                if checked[index]:
                    assert self.logits is not None, "a judged token's row is asked for"
                    if doubts(self.logits, token):
                        return index
                self.ahead.pop(0)
                self.logits = self.ahead_logits.pop(0)
        return None

    def _count_splice(self, tokens: Sequence[int]) -> None:
        self.stats.spliced_tokens += len(tokens)
        self.stats.splice_calls += 1
        self.stats.splice_spans.append(len(tokens))

    def position(self) -> int:
        """The current position: the tokens of the edit so far, cached or pending."""
        return len(self.llama.cached) - len(self.ahead) + len(self.pending)

    def rewind(self, position: int) -> None:
        """Go back to ``position`` (of :meth:`position`): what came after it leaves the cache."""
        self._drop_draft()
        cached = len(self.llama.cached)
        if position >= cached:
            self.pending = self.pending[: position - cached]
        else:
            self.pending = []
            self.llama.truncate(position)
            self.logits = None
        self.pending_splice = min(self.pending_splice, len(self.pending))

    def flush(self) -> None:
        """Evaluate the pending tokens (a decode step, or a splice when they hold copied lines)."""
        if self.pending:
            self._eval(())

    def draft(self, tokens: Sequence[int]) -> None:
        """Evaluate the pending tokens and a guess of what follows them in one batch, with logits at
        every drafted position (nothing happens while an earlier draft is still ahead)."""
        tokens = list(tokens[: max(self.room(), 0)])
        if tokens and not self.ahead:
            self.stats.drafted_tokens += len(tokens)
            self._eval(tokens)

    def _eval(self, draft: Sequence[int], judged: Sequence[bool] | None = None) -> None:
        """Evaluate the pending tokens and ``draft``, with logits after the last pending token and
        after each drafted one; with ``judged``, only where the next drafted token is ``judged``,
        and after the last."""
        self.watch.check_stop()
        if not self.pending and self.logits is None:  # the last token was taken back: evaluate it again
            self.pending = [self.llama.cached[-1]]
            self.llama.truncate(len(self.llama.cached) - 1)
        tokens = [*self.pending, *draft]
        if len(self.llama.cached) + len(tokens) > self.llama.n_ctx:
            raise ContextOverflow(f"the edit ran out of the model's context ({self.llama.n_ctx} tokens)")
        started = time.perf_counter()
        calls = self.llama.counters.calls
        first = max(len(self.pending) - 1, 0)  # the first row: after the last pending token, else the first drafted
        wanted = [index >= first for index in range(len(tokens))]
        if judged is not None:  # a row is wanted where the token after it is judged, and the last
            wanted[first:-1] = judged if self.pending else judged[1:]
        rows = self.llama.eval_rows(tokens, wanted)[first:]
        if self.pending:
            self.logits = rows.pop(0)
        self.ahead, self.ahead_logits = list(draft), rows
        used = self.llama.counters.calls - calls
        self.stats.eval_calls += used
        elapsed = time.perf_counter() - started
        if self.pending_splice:
            self.stats.splice_seconds += elapsed
            self.stats.splice_eval_calls.append(used)
        else:
            self.stats.decode_seconds += elapsed
            self.stats.decode_steps += used
        self.pending = []
        self.pending_splice = 0

    def retract(self) -> None:
        """Take back the last token put at the current position."""
        if self.pending:
            self.pending.pop()
        else:
            self._drop_draft()
            self.llama.truncate(len(self.llama.cached) - 1)
            self.logits = None

    def answer(self, start: int) -> tuple[int, ...]:
        """The tokens from ``start`` to the current position; a draft left over leaves the cache.
        The last pending tokens are never evaluated: no choice follows them."""
        self._drop_draft()
        return (*self.llama.cached[start:], *self.pending)

    def room(self) -> int:
        """Tokens the context can still take, less a reserve to close the program."""
        return self.llama.n_ctx - (len(self.llama.cached) - len(self.ahead)) - len(self.pending) - 32

    def out_of_budget(self) -> bool:
        """Whether the edit may choose no more tokens; if so, it is marked cut short."""
        if self.room() <= 0:
            self.cut = self.cut or "context"
            return True
        if self.stats.chosen_tokens >= self.budget:
            self.cut = self.cut or "max_new_tokens"
            return True
        return False

    def choose(self, candidates: Sequence[int] | None, wanted: int | None = None, excluded: Sequence[int] = ()) -> int:
        """The greedy token among ``candidates`` (all but ``excluded`` when None), or ``wanted``; it
        costs a decode step unless a draft already holds this position's logits."""
        if self.pending or self.logits is None:
            self._eval(())
        assert self.logits is not None
        started = time.perf_counter()
        if wanted is not None:
            token = wanted
        elif candidates is None and excluded:
            row = self.logits.copy()
            row[list(excluded)] = -np.inf
            token = int(np.argmax(row))
        elif candidates is None:
            token = int(np.argmax(self.logits))
        else:
            token = int(candidates[int(np.argmax(self.logits[list(candidates)]))])
        if candidates is not None or excluded:
            self.stats.constraint_seconds += time.perf_counter() - started
        self.stats.chosen_tokens += 1
        self._take(token)
        self.watch.tick()
        return token


@dataclass
class CopyCheck:
    """The model's check of the lines it copies, read off the splice's logits: a copied token the
    model finds unlikely (less probable than the threshold and not its first choice, the openings
    of ops left out; a line's first token is not judged) ends the copy before its line, and the
    model rewrites from there.  No line up to the last doubted one is doubted again, so a model
    that copies it anyway moves on."""

    log_threshold: float
    masked: list[int]  # the first tokens of the ops' openings
    checked: int = 0  # no line up to this one is doubted again

    @classmethod
    def of(cls, options: EditOptions, tokens: ProgramTokens) -> CopyCheck | None:
        """The check ``options.copy_check`` asks for (None when off, or when nothing is spliced)."""
        if options.copy_check <= 0 or options.splice != "prefill":
            return None
        return cls(math.log(options.copy_check), sorted({piece[0] for piece in tokens.ops.values()}))

    def doubts(self, logits: np.ndarray, token: int) -> bool:
        """Whether the model, at logits ``logits``, doubts the copied ``token``."""
        if token in self.masked:
            return False
        saved = logits[self.masked].copy()
        logits[self.masked] = -np.inf  # the row stays the caller's: put back below
        try:
            best = float(logits.max())
            if logits[token] >= best:
                return False
            return float(logits[token]) - best - math.log(float(np.exp(logits - best).sum())) < self.log_threshold
        finally:
            logits[self.masked] = saved

    def splice(
        self, run: TokenRun, tokens: Sequence[int], piece: Callable[[int], bytes], lines: Sequence[str], start: int
    ) -> int | None:
        """Splice the ``tokens`` of input lines ``lines`` (from line ``start`` on), checked; return
        the line the model doubts (from it on nothing is taken), or None."""
        bounds = list(itertools.accumulate(len(line.encode()) for line in lines))
        ends = list(itertools.accumulate(len(piece(token)) for token in tokens))
        if not ends or ends[-1] != bounds[-1] or len(tokens) > run.room():
            run.splice(tokens)  # pieces that do not spell the lines (a tokenizer adding a space), or no room: unchecked
            return None
        line_of = [start + bisect.bisect_right(bounds, end - 1) for end in ends]  # a token's line: its last byte's
        # A line's first token is not judged: where a line starts the model weighs the program's
        # next op against the text, and what it expects of the text there says little.
        checked = [
            line > self.checked and (index > 0 and line_of[index - 1] == line) for index, line in enumerate(line_of)
        ]
        index = run.checked_splice(tokens, self.doubts, checked)
        if index is None:
            return None
        self.checked = line_of[index]
        run.stats.doubted_copies += 1
        return self.checked


class PieceTrie:
    """Token sequences of alternative pieces, to walk choosing only where they branch."""

    def __init__(self, pieces: dict[str, list[int]]):
        self.pieces = pieces

    def walk(self, run: TokenRun, target: str | None) -> str:
        """Feed the tokens of one piece, choosing where the remaining pieces differ; return its name."""
        if target is not None and target not in self.pieces:
            raise DecodeError(f"the scripted {target} is outside what the grammar allows here")
        alive = dict(self.pieces)
        depth = 0
        while len(alive) > 1:
            branches = {tokens[depth] for tokens in alive.values()}
            if len(branches) == 1:
                token = branches.pop()
                run.force([token])
            else:
                wanted = alive[target][depth] if target else None
                token = run.choose(sorted(branches), wanted)
            alive = {name: tokens for name, tokens in alive.items() if tokens[depth] == token}
            depth += 1
        ((name, tokens),) = alive.items()
        if depth < len(tokens):
            run.force(tokens[depth:])
        return name


def write_number(
    run: TokenRun,
    tokens: ProgramTokens,
    lo: int,
    hi: int,
    terminator: list[int],
    goal: int | None,
    skip: frozenset[int] = frozenset(),
) -> int:
    """Write a number in [lo, hi] and not in ``skip`` digit by digit, then the terminator; return
    the number.  ``goal`` is the scripted number of forced mode."""
    prefix = ""
    goal_text = None if goal is None else str(goal)
    while True:
        started = time.perf_counter()
        digits, can_end = digit_choices(prefix, lo, hi, skip)
        options = {tokens.digit[c]: c for c in digits}
        if can_end:
            options[terminator[0]] = ""
        run.stats.constraint_seconds += time.perf_counter() - started
        want = None
        if goal_text is not None:
            want = tokens.digit[goal_text[len(prefix)]] if len(prefix) < len(goal_text) else terminator[0]
        if want is not None and want not in options:
            marker = " or a marker line" if skip else ""
            raise DecodeError(f"the scripted number {goal} is outside {lo}..{hi}{marker}")
        if len(options) == 1:
            (token,) = options
            run.force([token])
        else:
            token = run.choose(list(options), want)
        if not options[token]:
            run.force(terminator[1:])
            return int(prefix)
        prefix += options[token]
