"""Guesses the local decoder verifies in a batch: prompt-lookup drafts of a rewrite, and a
program's next op tag and gen bodies drafted from the input.

A guess is only ever kept where the greedy decoder makes the same choice (see
:class:`~copyedit_lsp.decode.tokens.TokenRun`), so drafts change the cost of an edit, never its result.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence

from ..core.program import GEN_CLOSE, ChangeCopy, Copy, Gen, Op, Program
from .edit import Speedups
from .prompt import SourceView, as_model_sees
from .tokens import ProgramTokens, body_text

GEN_WINDOW = 32  # tokens: a gen body is drafted from input near where it last matched


class PromptLookup:
    """Prompt-lookup drafts: the input's tokens that followed the output's last n-gram."""

    def __init__(self, original: list[int], longest: int, draft_tokens: int, window: int | None = None):
        self.original = original
        self.window = window  # how far from the cursor a match may be (None: anywhere)
        self.longest = longest
        self.draft_tokens = draft_tokens
        self.cursor = 0  # where the last match ended: the output usually moves forward through the input
        self.starts: dict[tuple[int, ...], list[int]] = {}
        for n in range(1, longest + 1):
            for start in range(len(original) - n):
                self.starts.setdefault(tuple(original[start : start + n]), []).append(start)

    def restart(self, cursor: int) -> None:
        """Start a new output, whose first draft is the input from ``cursor`` on."""
        self.cursor = cursor

    def draft(self, written: list[int], room: int) -> list[int]:
        """Up to ``min(draft_tokens, room)`` tokens; the longest n-gram wins, then the match nearest the cursor."""
        limit = min(self.draft_tokens, room)
        if not written:
            return self.original[self.cursor : self.cursor + limit]
        for n in range(min(self.longest, len(written)), 0, -1) if limit > 0 else ():
            starts = self.starts.get(tuple(written[-n:]), [])
            if self.window is not None:
                starts = [s for s in starts if abs(s + n - self.cursor) <= self.window]
            if starts:
                start = next((s for s in starts if s + n >= self.cursor), starts[0])
                self.cursor = start + n
                return self.original[self.cursor : self.cursor + limit]
        return []


class ProgramDrafter:
    """Guesses of a program's next tokens: the next op's tag, and (by :class:`PromptLookup`) gen bodies.
    With a ``plan`` (an apply's merge), the plan's next op while the program has followed it."""

    def __init__(
        self,
        tokens: ProgramTokens,
        view: SourceView,
        tokenize: Callable[[str], list[int]],
        piece: Callable[[int], bytes],
        *,
        plan: Program | None = None,
        ngram: int,
        draft_tokens: int,
    ):
        self.plan = plan.ops if plan is not None else None
        self.tokenize = tokenize
        self.tokens = tokens
        self.view = view
        self.piece = piece
        self.draft_tokens = draft_tokens
        self.line = 1  # the first input line the program has not yet copied or rewritten
        self.lookup = PromptLookup(tokenize("".join(view.lines)), ngram, draft_tokens, window=GEN_WINDOW)
        offsets = list(itertools.accumulate((len(piece(t)) for t in self.lookup.original), initial=0))
        lines = itertools.accumulate((len(line.encode()) for line in view.lines), initial=0)
        self.line_tokens = [bisect.bisect_left(offsets, offset) for offset in lines]
        self.line_ends = {t for t in set(self.lookup.original) if b"\n" in piece(t)}
        self.input_lines = set(view.lines)

    def token_of_line(self, line: int) -> int:
        """The index of the first input token at or after the start of ``line``."""
        return self.line_tokens[min(line, len(self.view.lines) + 1) - 1]

    def next_op(self, ops: Sequence[Op], *, with_body: bool) -> list[int]:
        """The plan's next op, where the program has followed the plan; else after a copy, a gen
        (and the start of its body), after anything else a copy from the current line to the end."""
        if self.plan is not None and tuple(ops) == self.plan[: len(ops)]:
            return self._planned(self.plan[len(ops)] if len(ops) < len(self.plan) else None)
        last = ops[-1] if ops else None
        if not isinstance(last, Copy):
            return self.copy_tag(self.line)
        if self.line > len(self.view.lines):
            return []
        if not with_body:
            return self.tokens.ops["gen"]
        self.lookup.restart(self.token_of_line(self.line))
        return [*self.tokens.ops["gen"], *self._to_line_end(self.lookup.draft([], self.draft_tokens))]

    def _planned(self, op: Op | None) -> list[int]:
        """The tokens of ``op`` as the program writes it (a gen's whole body), or of the end."""
        if isinstance(op, Copy | ChangeCopy):
            return self.tokens.copy_tag(op.start, op.end, change=isinstance(op, ChangeCopy))
        if isinstance(op, Gen):
            return [*self.tokens.ops["gen"], *self.tokenize(as_model_sees(op.text) + GEN_CLOSE)]
        return self.tokens.ops["end"]

    def in_gen(self, written: list[int], body: bytes, room: int, speedups: Speedups) -> list[int]:
        """The draft inside a gen body: with ``draft_tags``, the end of the gen and the copy after it
        once the body reads ``</`` or has just ended a line that is not an input line (a rewritten
        line: minimal programs go back to copying); with ``draft_gens``, the input by prompt lookup,
        to the end of its line unless the body's last line was an input line."""
        close = self.tokens.gen_close
        if speedups.draft_tags and written and written[-1] == close[0]:
            text = body_text(body[: -len(self.piece(close[0]))])
            return [*close[1:], *self.copy_tag(self.resume_line(text))]
        if speedups.draft_tags and body.endswith(b"\n") and self._rewritten(body):
            return [*close, *self.copy_tag(self.resume_line(body_text(body)))]
        if not speedups.draft_gens:
            return []
        draft = self.lookup.draft(written, room)
        if b"\n" in body and not self._rewritten(body[: body.rindex(b"\n") + 1]):
            return draft  # the body is copying input lines out: draft across lines
        return self._to_line_end(draft)

    def _to_line_end(self, draft: list[int]) -> list[int]:
        """``draft`` up to and including its first token that ends a line."""
        end = next((i for i, token in enumerate(draft) if token in self.line_ends), len(draft) - 1)
        return draft[: end + 1]

    def _rewritten(self, body: bytes) -> bool:
        last = body[:-1].rsplit(b"\n", 1)[-1].decode("utf-8", errors="replace") + "\n"
        return last not in self.input_lines

    def copy_tag(self, start: int) -> list[int]:
        """``<copy lines="start-N"/>``, N the last line (nothing when ``start`` is past it)."""
        n = len(self.view.lines)
        if not 1 <= start <= n:
            return []
        return self.tokens.copy_tag(start, n)

    def resume_line(self, text: str) -> int:
        """The input line after what a gen body of ``text`` (written from :attr:`line`) replaced:
        after the nearest input line equal to the body's last line, else as many lines on."""
        lines = as_model_sees(text).splitlines()
        expected = self.line + len(lines)
        if not lines:
            return self.line
        last = lines[-1].strip()
        same = [k for k in range(self.line, len(self.view.lines) + 1) if self.view.lines[k - 1].strip() == last]
        return min(same, key=lambda k: abs(k + 1 - expected)) + 1 if same else expected
