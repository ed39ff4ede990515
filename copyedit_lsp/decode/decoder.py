"""The decoder: one explicit loop that writes edit programs under the grammar and splices copies.

Modes (one model, one prompt family, one set of counters):

* ``program`` + ``splice="prefill"``: the model chooses ops, digits and gen bodies under a
  token-level constraint; a closed copy's lines are evaluated into the KV cache in one batch.
* ``program`` + ``splice="none"``: the same, the copied text is never evaluated.
* ``rewrite``: the model writes the whole edited region as plain text (the baseline).
* ``lookup``: rewrite accelerated by prompt-lookup speculative decoding: a draft of the tokens
  that followed the last few output tokens in the original is verified in one batch, and the
  longest prefix the greedy model agrees with is kept.  Its output is ``rewrite``'s but for
  near ties: llama.cpp's batched and one-token evaluations round differently (with
  ``batch_invariant`` evaluation they do not, and the outputs are the same).
* ``forced``: executes a given program at exactly the cost a perfect model would pay.

Structural positions are constrained by a trie over the token sequences of the possible
next pieces: where the trie branches the model chooses (argmax over the branches); where it
does not, tokens are forced.  :class:`Speedups` make this cheap on a CPU, each lossless in
exact arithmetic: forced tokens and splices wait until logits are needed, so a chosen token,
the forced piece after it, a splice and the next op's opening share one llama_decode call;
and guesses (the next op's tag, gen bodies drafted from the input) are verified in that same
batch, with logits at every drafted position, so whatever the greedy decoder would have
chosen anyway costs no step of its own.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.change import Change
from ..core.grammar import copy_reach
from ..core.program import GEN_CLOSE, ChangeCopy, Copy, Gen, Op, Program, op_kind
from . import chooser
from .drafts import ProgramDrafter, PromptLookup
from .edit import (
    MODES,
    EditOptions,
    EditResult,
    EditStats,
    EditWatch,
    ProgressCallback,
    Speedups,
    StopFlag,
    answer_code,
    applied_otherwise,
    fall_back,
    repeats_input,
    rewritten_text,
)
from .prompt import SourceView, as_model_sees
from .session import ModelSession
from .tokens import (
    REOPEN,
    CopyCheck,
    PieceTrie,
    TokenRun,
    body_text,
    reopening,
    write_number,
)
from .writer import ProgramWriter


@dataclass(frozen=True)
class GenBody:
    """A decoded gen: its text, whether the model ended its turn in it, and whether it was closed
    by a ``<gen>`` the model began a line with (the next op is a gen, already opened)."""

    text: str
    ended: bool = False
    reopened: bool = False


@dataclass(frozen=True)
class CopyOutcome:
    """What a closed copy tag came to: the copy kept (None: taken back whole) and the line the
    model doubted, where the copy check stopped it."""

    kept: Copy | ChangeCopy | None
    doubted: int | None = None


class Decoder:
    """The decode loop: edits and applies written on one :class:`~copyedit_lsp.decode.session.ModelSession`
    (the loaded model, its adapters and warmed prefixes)."""

    def __init__(
        self, session: ModelSession, *, max_gen_tokens: int = 512, draft_tokens: int = 16, draft_ngram: int = 3
    ):
        self.session = session
        self.llama, self.tokens = session.llama, session.tokens  # the session's, read on every step
        self.max_gen_tokens = max_gen_tokens
        self.draft_tokens = draft_tokens
        self.draft_ngram = draft_ngram
        self._tries: dict[tuple[bool, bool], PieceTrie] = {}  # the op openings allowed, by file and change copy

    @classmethod
    def load(cls, model: str, **settings) -> Decoder:
        """A decoder on ``model`` loaded with ``settings`` (:meth:`ModelSession.load`)."""
        return cls(ModelSession.load(model, **settings))

    @property
    def device(self) -> str:
        return self.session.device

    def close(self) -> None:
        self.session.close()

    def warm(self, options: EditOptions) -> None:
        self.session.warm(options)

    def forget(self) -> None:
        self.session.forget()

    def prompt(self, source: str, instruction: str, options: EditOptions = EditOptions()) -> list[int]:
        return self.session.prompt(source, instruction, options)

    def choose(self, source: str, instruction: str, language: str, names: Sequence[str]) -> str | None:
        return chooser.choose(self.session, source, instruction, language, names)

    def rank(
        self,
        source: str,
        change: Change,
        texts: Sequence[str],
        options: EditOptions = EditOptions(),
        instruction: str = "",
    ) -> list[float]:
        return chooser.rank(self.session, source, change, texts, options, instruction)

    def edit(
        self,
        source: str,
        instruction: str,
        options: EditOptions = EditOptions(),
        *,
        stop: StopFlag | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> EditResult:
        """Edit ``source`` by ``instruction`` (:class:`~copyedit_lsp.decode.edit.Editor`).  Program modes run
        with the span selector's adapter, rewrite and lookup with the base model; a program cut
        short or parsing worse gives way to a lookup rewrite (:func:`~copyedit_lsp.decode.edit.fall_back`)."""
        examples = self.session.examples_for(options)
        options.check(MODES, examples)
        prompt = self.session.prompt(source, instruction, options)
        result = self._decode(prompt, source, options, stop, on_progress)
        return fall_back(self, result, source, instruction, options, mode="lookup", stop=stop, on_progress=on_progress)

    def apply(
        self,
        source: str,
        change: Change,
        options: EditOptions = EditOptions(),
        *,
        instruction: str = "",
        plan: Program | None = None,
        stop: StopFlag | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> EditResult:
        """Merge ``change`` into ``source``: an apply program whose copies of the change are
        spliced like the file's (program and forced modes, the apply selector's adapter; no copy
        check; program mode without an apply selector is a lookup rewrite, ``stats.fallback``,
        unless ``options.fallback`` is off: then the base model writes the program),
        or the merged file written out given the change (rewrite; lookup drafts from the file and
        the change).  ``plan``, a program the merge found, is only ever a draft: each of its tags is
        kept where the model chooses it, so it changes the cost, never the result.  The file's lines
        are merged ended, the result ending as the file does (:func:`~copyedit_lsp.core.change.ending_as`)."""
        options.check(MODES, "none")
        otherwise = applied_otherwise(self, source, change, options, rewrite="lookup",
                                      selector=self.session.apply_selector is not None, instruction=instruction, plan=plan,
                                      stop=stop, on_progress=on_progress)  # fmt: skip
        if otherwise is not None:
            return otherwise
        text = self.session.template.apply_prompt(source, change, mode=options.mode, language=options.language,
                                          instruction=instruction)  # fmt: skip
        prompt = self.llama.tokenize(text, special=True)
        return self._decode(prompt, source, options, stop, on_progress, change=change, plan=plan)

    def _decode(
        self,
        prompt: list[int],
        source: str,
        options: EditOptions,
        stop: StopFlag | None,
        on_progress: ProgressCallback | None,
        *,
        change: Change | None = None,
        plan: Program | None = None,
    ) -> EditResult:
        """One decoding of ``prompt`` in ``options.mode`` with the mode's adapter (an apply's where
        ``change``), timed."""
        self.session.prepare(options.mode, task="apply" if change is not None else "edit")
        started = time.perf_counter()
        watch = EditWatch(EditStats(mode=options.mode, splice=options.splice), stop, on_progress)
        run = TokenRun(self.llama, watch, force=options.speedups.force, batch=options.speedups.batch)
        if options.mode in ("rewrite", "lookup"):
            copied = source + change.text(1, len(change.lines)) if change is not None else None
            fenced = change is not None or options.prompt_layout.fence
            result = self._rewrite(run, prompt, source, options, copied=copied, fenced=fenced)
        else:
            writer = ProgramWriter.of(source, options, change)
            result = self._program(run, prompt, writer, options, change=change, plan=plan)
        run.stats.total_seconds = time.perf_counter() - started
        return result

    def _program(
        self,
        run: TokenRun,
        prompt: list[int],
        writer: ProgramWriter,
        options: EditOptions,
        *,
        change: Change | None = None,
        plan: Program | None = None,
    ) -> EditResult:
        """A program written op by op under the grammar (an apply program where ``change``)."""
        view, speedups, scripted = writer.view, options.speedups, options.program is not None
        drafter = self._started(run, prompt, view, writer.changed, plan, options)
        check = None if scripted or change is not None else CopyCheck.of(options, self.tokens)
        reopened = False  # the last gen was closed by a <gen> that opened the next one
        while not run.out_of_budget():
            goal = writer.goal()
            if speedups.draft_tags and not reopened:
                run.draft(drafter.next_op(writer.ops, with_body=speedups.draft_gens))
            trie = self._openings(writer.first <= writer.lines, writer.change_left)
            op_start = run.position()
            kind = "gen" if reopened else trie.walk(run, op_kind(goal) if scripted else None)
            if kind == "end":
                break
            doubted = None  # the line a checked copy stopped before: the model rewrites from there
            if kind == "change":
                taken = self._copy(run, writer.changed, writer.change_after, goal, options.splice, None, op_start, ChangeCopy,
                                   writer.markers)  # fmt: skip
                writer.copy(taken.kept)  # type: ignore[arg-type]  # unchecked: always kept
            elif kind == "copy":
                doubted = self._file_copy(run, writer, drafter, goal, options.splice, check, op_start)
            if kind == "gen" or doubted is not None:
                gen = self._gen_body(run, goal.text if isinstance(goal, Gen) else None, drafter, speedups,
                                     None if scripted else (view, writer.after))  # fmt: skip
                if reopened and writer.says_again(gen.text):
                    break
                reopened = gen.reopened
                if gen.text and writer.gen(gen.text, doubted):
                    break
                drafter.line = drafter.resume_line(gen.text)
                if gen.ended:
                    break
            run.stats.ops = len(writer.ops)
            run.watch.report(writer.ops)
        else:
            run.force(self.tokens.ops["end"])
        return self._written(run, prompt, writer)

    def _started(
        self,
        run: TokenRun,
        prompt: list[int],
        view: SourceView,
        changed: SourceView,
        plan: Program | None,
        options: EditOptions,
    ) -> ProgramDrafter:
        """The prompt evaluated once it is known to fit with the text (and the ``changed`` lines);
        the drafter of the program."""
        drafter = self.drafter(view, plan)
        changed_tokens = len(self.llama.tokenize(changed.span(1, len(changed.lines))))
        self.session.fit(run, prompt, len(drafter.lookup.original) + changed_tokens, options)
        run.prefill(prompt)
        return drafter

    def _file_copy(
        self,
        run: TokenRun,
        writer: ProgramWriter,
        drafter: ProgramDrafter,
        goal: Op | None,
        splice: str,
        check: CopyCheck | None,
        op_start: int,
    ) -> int | None:
        """A copy of the file's lines written (:meth:`_copy`); the line the model doubted, if any."""
        outcome = self._copy(run, writer.view, writer.first, goal, splice, check, op_start, Copy)
        if outcome.kept is not None:
            writer.copy(outcome.kept)
        if outcome.doubted is not None:
            writer.doubt(outcome.doubted)
        drafter.line = writer.after
        return outcome.doubted

    def _written(self, run: TokenRun, prompt: list[int], writer: ProgramWriter) -> EditResult:
        """The result of the program ``writer`` holds, once the decoding has stopped."""
        run.cut = run.cut or writer.cut
        run.stats.ops = len(writer.ops)
        run.watch.report(writer.ops)  # the ops a break left unreported
        tokens = run.answer(len(prompt))
        text = writer.text()
        run.stats.output_tokens = len(self.llama.tokenize(text)) if text else 0
        return EditResult(writer.program(), text, run.stats, tokens, cut=run.cut)

    def _openings(self, file: bool, change: bool) -> PieceTrie:
        """The trie of the ops that may come next (:meth:`ProgramTokens.openings`)."""
        if (file, change) not in self._tries:
            self._tries[file, change] = PieceTrie(self.tokens.openings(file=file, change=change))
        return self._tries[file, change]

    def drafter(self, view: SourceView, plan: Program | None = None) -> ProgramDrafter:
        """The guesses of a program over ``view`` (following ``plan`` while the program does), from
        this decoder's tokens and draft settings."""
        return ProgramDrafter(self.tokens, view, self.llama.tokenize, self.llama.piece, plan=plan,
                              ngram=self.draft_ngram, draft_tokens=self.draft_tokens)  # fmt: skip

    def _copy(
        self,
        run: TokenRun,
        view: SourceView,
        first: int,
        goal: Op | None,
        splice: str,
        check: CopyCheck | None,
        op_start: int,
        kind: type[Copy] | type[ChangeCopy],
        markers: frozenset[int] = frozenset(),
    ) -> CopyOutcome:
        """The rest of a copy tag (of ``kind``: lines of the file or of the change, ``view``) from
        its line numbers on, then its lines spliced; it holds none of the ``markers``.  With a
        ``check``, a copy the model doubts stops before the doubted line (nothing of it is kept
        when that is its first line: the tag from ``op_start`` on is taken back) and a gen opens."""
        n = len(view.lines)
        scripted = goal if isinstance(goal, kind) else None
        start = write_number(run, self.tokens, first, n, self.tokens.dash, scripted.start if scripted else None,
                             markers)  # fmt: skip
        end_mark = run.position()
        reach = copy_reach(markers, start, n)
        end = write_number(run, self.tokens, start, reach, self.tokens.copy_close, scripted.end if scripted else None)
        if splice != "prefill":
            return CopyOutcome(kind(start, end))
        tokens = self.llama.tokenize(view.span(start, end))
        if check is None:
            run.splice(tokens)
            return CopyOutcome(kind(start, end))
        doubted = check.splice(run, tokens, self.llama.piece, view.lines[start - 1 : end], start)
        if doubted is None:
            return CopyOutcome(kind(start, end))
        kept = kind(start, doubted - 1) if doubted > start else None
        run.rewind(end_mark if kept else op_start)
        if kept:
            run.force([*self.tokens.number(kept.end), *self.tokens.copy_close])
            run.splice(self.llama.tokenize(view.span(kept.start, kept.end)))
        run.force(self.tokens.ops["gen"])
        return CopyOutcome(kept, doubted)

    def _gen_body(
        self,
        run: TokenRun,
        goal: str | None,
        drafter: ProgramDrafter,
        speedups: Speedups,
        at: tuple[SourceView, int] | None,
    ) -> GenBody:
        """Decode a gen body freely until ``</gen>``.  ``at`` is the input and the line the gen is
        written before: while the gen only repeats the input from there, it cannot end
        (:func:`~copyedit_lsp.decode.edit.repeats_input`).  A ``<gen>`` that begins a line after the first
        closes the gen and opens the next: the context then reads ``</gen>\\n<gen>\\n`` there.

        Drafts come from :meth:`~copyedit_lsp.decode.drafts.ProgramDrafter.in_gen`."""
        script = iter(self.llama.tokenize(as_model_sees(goal) + GEN_CLOSE)) if goal is not None else None
        body = b""
        written: list[int] = []
        marks: list[tuple[int, int]] = []  # the position and the body's length before each token
        drafter.lookup.restart(drafter.token_of_line(drafter.line))
        for _ in range(self.max_gen_tokens):
            if run.out_of_budget():
                break
            if not run.ahead:
                run.draft(drafter.in_gen(written, body, run.room(), speedups))
            marks.append((run.position(), len(body)))
            token = run.choose(None, next(script) if script is not None else None, self._gen_masks(body, at))
            if self.llama.is_end_of_generation(token):
                run.retract()  # the end of the turn never enters the cache
                return GenBody(body_text(body), ended=True)
            written.append(token)
            started = time.perf_counter()  # watching for the end of the gen is part of the constraint
            piece = self.llama.piece(token)
            body += piece
            close = body.find(b"</gen>", max(0, len(body) - len(piece) - 6))
            reopen = reopening(body, len(body) - len(piece) - len(REOPEN)) if script is None else -1
            run.stats.constraint_seconds += time.perf_counter() - started
            if close >= 0 and (reopen < 0 or close < reopen):
                self._end_gen(run, piece, body[close + 6 :])
                return GenBody(body_text(body[:close]))
            if reopen >= 0:
                self._reopen(run, marks, body, reopen)
                return GenBody(body_text(body[:reopen]), reopened=True)
        # a length or context cap: close the gen on a whole line
        run.cut = run.cut or "max_gen_tokens"
        tail = "" if body.endswith(b"\n") else "\n"
        run.force(self.llama.tokenize(tail + GEN_CLOSE))
        return GenBody(body_text(body) + tail)

    def _reopen(self, run: TokenRun, marks: list[tuple[int, int]], body: bytes, at: int) -> None:
        """Make the context read ``body[:at]`` then ``</gen>\\n<gen>\\n``: back to the token that
        began the ``<gen>`` at ``at``, what it held before it written again, then the two tags."""
        position, length = next((p, n) for p, n in reversed(marks) if n <= at)
        run.rewind(position)
        kept = body[length:at].decode("utf-8", errors="ignore")
        run.force([*(self.llama.tokenize(kept) if kept else []), *self.tokens.gen_close, *self.tokens.ops["gen"]])

    def _gen_masks(self, body: bytes, at: tuple[SourceView, int] | None) -> list[int]:
        """What a gen ``body`` may not write next: an unescaped opening (:class:`OpeningMask`) and,
        while the gen changes nothing (``at`` known), its end."""
        openings = self.session.opening_mask.excluded(body)
        unchanged = self._unchanged_gen_masks(body, at) if at is not None else []
        return [*openings, *unchanged] if unchanged else openings

    def _unchanged_gen_masks(self, body: bytes, at: tuple[SourceView, int]) -> list[int]:
        """What a gen ``body`` written before input line ``at[1]`` may not write next where a line
        starts (or holds only whitespace) while the gen changes nothing
        (:func:`~copyedit_lsp.decode.edit.repeats_input`): its end, or the end of the turn."""
        view, line = at
        cut = body.rfind(b"\n") + 1
        head, tail = body[:cut], body[cut:]
        if not tail.strip():
            repeats = repeats_input(view, head.decode("utf-8", errors="replace"), line)
            return self.session.unchanged_gen_ends if repeats else []
        # mid-line: "\n</" would end this line and the gen at once; the line itself is compared
        # first, so the whole gen is read again only where the line repeats the input's
        at_line = line - 1 + head.count(b"\n")
        if at_line >= len(view.lines) or view.lines[at_line] != (tail + b"\n").decode("utf-8", errors="replace"):
            return []
        return (
            self.session.padded_closes
            if repeats_input(view, (body + b"\n").decode("utf-8", errors="replace"), line)
            else []
        )

    def _end_gen(self, run: TokenRun, piece: bytes, rest: bytes) -> None:
        """Make the context read exactly ``</gen>\\n`` after the token ``piece`` that closed a gen
        with ``rest`` after the tag."""
        if not rest:
            run.force(self.tokens.newline)
        elif rest != b"\n":
            run.retract()
            kept = piece[: len(piece) - len(rest)].decode("utf-8", errors="ignore")
            run.force(self.llama.tokenize(kept + "\n"))

    def _rewrite(
        self,
        run: TokenRun,
        prompt: list[int],
        source: str,
        options: EditOptions,
        *,
        copied: str | None = None,
        fenced: bool = True,
    ) -> EditResult:
        """The code written out (``copied``: the text lookup drafts from, else ``source``); ``fenced``:
        the prompt opened its code block."""
        original = self.llama.tokenize(source if copied is None else copied)
        self.session.fit(run, prompt, len(original), options)
        run.prefill(prompt)
        out = b""
        written: list[int] = []
        drafts = PromptLookup(original, self.draft_ngram, self.draft_tokens) if options.mode == "lookup" else None
        while not run.out_of_budget():
            if drafts:
                run.draft(drafts.draft(written, min(run.budget - len(written), run.room()) - 1))
            token = run.choose(None)
            if self.llama.is_end_of_generation(token):
                break
            written.append(token)
            out += self.llama.piece(token)
            if answer_code(out, fenced)[1]:
                break
        run.answer(len(prompt))
        text = rewritten_text(answer_code(out, fenced)[0].decode("utf-8", errors="replace"), source)
        run.stats.output_tokens = len(written)
        return EditResult(None, text, run.stats, tuple(written), cut=run.cut)
