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

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .change import Change
from .drafts import ProgramDrafter, PromptLookup
from .edit import (
    MODES,
    ContextOverflow,
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
    fixed_prefix,
    repeats_input,
    rewritten_text,
)
from .grammar import copy_reach
from .llama_model import LlamaModel, Snapshot
from .program import GEN_CLOSE, ChangeCopy, Copy, Gen, Op, Program, op_kind
from .prompt import WHOLE_FILE, ChatTemplate, SourceView, as_model_sees
from .selector import Selector
from .tokens import (
    REOPEN,
    CopyCheck,
    OpeningMask,
    PieceTrie,
    ProgramTokens,
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


def _padded_closes(pieces: Sequence[bytes]) -> list[int]:
    """The tokens that begin a ``</gen>`` after whitespace in one piece (`` </``, ``\n</``): where a
    line starts, masking ``<`` and ``</`` alone misses them."""
    opening = GEN_CLOSE.encode()
    found = []
    for token, piece in enumerate(pieces):
        rest = piece.lstrip(b" \t\r\n")
        if rest and len(rest) < len(piece) and opening.startswith(rest[: len(opening)]):
            found.append(token)
    return found


class Decoder:
    """Edits text with one loaded model; keeps the prompt prefix cached between edits."""

    def __init__(
        self,
        llama: LlamaModel,
        *,
        selector: Selector | None = None,
        apply_selector: Selector | None = None,
        max_gen_tokens: int = 512,
        draft_tokens: int = 16,
        draft_ngram: int = 3,
    ):
        self.llama = llama
        self.selector = selector  # the trained span selector of the program modes, if any
        self.apply_selector = apply_selector  # the one of apply programs, if any
        self.draft_tokens = draft_tokens
        self.draft_ngram = draft_ngram
        self.template = ChatTemplate(llama.metadata)
        self.max_gen_tokens = max_gen_tokens
        self.tokens = ProgramTokens.of(llama.tokenize)
        self._prefixes: dict[tuple, tuple[list[int], Snapshot]] = {}  # warmed prompt prefixes
        self._tries: dict[tuple[bool, bool], PieceTrie] = {}  # the op openings allowed, by file and change copy

    @classmethod
    def load(
        cls,
        model: str,
        *,
        n_ctx: int = 0,
        n_threads: int | None = None,
        n_gpu_layers: int = 0,
        batch_invariant: bool = False,
        selector: str = "default",
        apply_selector: str = "default",
        fetch_missing: bool = True,
        progress: bool = False,
    ) -> Decoder:
        """Load a model by name (fetched from PyPI when missing) or GGUF path (``batch_invariant``:
        see :class:`~copyedit_lsp.llama_model.LlamaModel`) and the span selectors the ``selector``
        and ``apply_selector`` settings name (:func:`~copyedit_lsp.selector.resolve_selector`)."""
        from .models import resolve_model
        from .selector import resolve_selector

        chosen = resolve_selector(selector, model)
        applying = resolve_selector(apply_selector, model, task="apply")
        path = resolve_model(model, fetch_missing=fetch_missing, progress=progress)
        llama = LlamaModel(
            path, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers, batch_invariant=batch_invariant
        )
        if chosen is not None:
            try:
                llama.use_adapter(chosen.path)  # a bad adapter file fails the load, not the first edit
            except Exception:
                llama.close()
                raise
        return cls(llama, selector=chosen, apply_selector=applying)

    @property
    def device(self) -> str:
        """Where the model runs (:attr:`~copyedit_lsp.llama_model.LlamaModel.device`)."""
        return f"{self.llama.path.name} on {self.llama.device}"

    def close(self) -> None:
        """Free the model."""
        self.llama.close()

    def edit(
        self,
        source: str,
        instruction: str,
        options: EditOptions = EditOptions(),
        *,
        stop: StopFlag | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> EditResult:
        """Edit ``source`` by ``instruction`` (:class:`~copyedit_lsp.edit.Editor`).  Program modes run
        with the span selector's adapter, rewrite and lookup with the base model; a program cut
        short or parsing worse gives way to a lookup rewrite (:func:`~copyedit_lsp.edit.fall_back`)."""
        examples = self.examples_for(options)
        options.check(MODES, examples)
        prompt = self.prompt(source, instruction, options)
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
        are merged ended, the result ending as the file does (:func:`~copyedit_lsp.change.ending_as`)."""
        options.check(MODES, "none")
        otherwise = applied_otherwise(self, source, change, options, rewrite="lookup",
                                      selector=self.apply_selector is not None, instruction=instruction, plan=plan,
                                      stop=stop, on_progress=on_progress)  # fmt: skip
        if otherwise is not None:
            return otherwise
        text = self.template.apply_prompt(source, change, mode=options.mode, language=options.language,
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
        self.prepare(options.mode, task="apply" if change is not None else "edit")
        started = time.perf_counter()
        watch = EditWatch(EditStats(mode=options.mode, splice=options.splice), stop, on_progress)
        run = TokenRun(self.llama, watch, force=options.speedups.force, merge=options.speedups.merge)
        if options.mode in ("rewrite", "lookup"):
            copied = source + change.text(1, len(change.lines)) if change is not None else None
            fenced = change is not None or options.prompt_layout.fence
            result = self._rewrite(run, prompt, source, options, copied=copied, fenced=fenced)
        else:
            writer = ProgramWriter.of(source, options, change)
            result = self._program(run, prompt, writer, options, change=change, plan=plan)
        run.stats.total_seconds = time.perf_counter() - started
        return result

    def choose(self, source: str, instruction: str, language: str, names: Sequence[str]) -> str | None:
        """The definition the instruction is about (:meth:`~copyedit_lsp.edit.Editor.choose`): the
        base model's greedy choice, token by token, among the names and the whole file."""
        self.prepare("rewrite")
        prompt = self.llama.tokenize(self.template.choice_prompt(source, instruction, language, names), special=True)
        if self.llama.make_room(len(prompt) + 64):
            self._prefixes.clear()
        if len(prompt) + 64 > self.llama.n_ctx:
            raise ContextOverflow(f"the file ({len(prompt)} tokens with the question) does not fit the context")
        run = TokenRun(self.llama, EditWatch(EditStats(mode="choice"), None, None), force=True, merge=True)
        run.prefill(prompt)
        pieces = {name: self.llama.tokenize(f"{name}`") for name in (*names, WHOLE_FILE)}
        chosen = PieceTrie(pieces).walk(run, None)
        return None if chosen == WHOLE_FILE else chosen

    def rank(
        self,
        source: str,
        change: Change,
        texts: Sequence[str],
        options: EditOptions = EditOptions(),
        instruction: str = "",
    ) -> list[float]:
        """Each of ``texts`` (placements of ``change`` into ``source``) scored by the base model's
        log-likelihood of writing it out given the change (:meth:`~copyedit_lsp.edit.Editor.rank`):
        teacher-forced, no token generated; the prompt and the texts' common opening evaluated once,
        then each text's own part, to a few tokens into their common ending, in one batch."""
        self.prepare("rewrite", "apply")
        prompt = self.llama.tokenize(
            self.template.apply_prompt(
                source, change, mode="rewrite", language=options.language, instruction=instruction
            ),
            special=True,
        )
        answers = [self.llama.tokenize(text) for text in texts]
        if self.llama.make_room(len(prompt) + max(map(len, answers)) + 1):
            self._prefixes.clear()
        if len(prompt) + max(map(len, answers)) + 1 > self.llama.n_ctx:
            raise ContextOverflow(f"the file and the change ({len(prompt)} tokens) do not fit the context to choose")
        opening = _common(answers)
        ending = min(_common([a[::-1] for a in answers]), min(map(len, answers)) - opening)
        logits, _ = self.llama.prefill([*prompt, *answers[0][:opening]])
        scores = []
        for answer in answers:
            self.llama.truncate(len(prompt) + opening)
            scores.append(
                _log_likelihood(self.llama, logits, answer[opening : len(answer) - max(0, ending - RANK_TAIL)])
            )
        return scores

    def prompt(self, source: str, instruction: str, options: EditOptions = EditOptions()) -> list[int]:
        """The prompt's tokens for an edit: the conversation and the opening of the answer."""
        text = self.template.edit_prompt(
            source,
            instruction,
            mode=options.mode,
            splice=options.splice,
            language=options.language,
            examples=self.examples_for(options),
            layout=options.prompt_layout,
        )
        return self.llama.tokenize(text, special=True)

    def forget(self) -> None:
        """Empty the KV cache: the next prompt is evaluated whole, none of it reused (a
        benchmark's modes, run one after another on the same prompt, timed alike)."""
        self.llama.truncate(0)

    def warm(self, options: EditOptions) -> None:
        """Make the KV cache hold exactly the fixed prompt prefix of edits with ``options``
        (:class:`~copyedit_lsp.edit.Editor`): evaluated once, then restored from a snapshot."""
        self.prepare(options.mode)  # the mode's adapter first: changing it empties the cache
        examples = self.examples_for(options)
        key = (
            self.adapter_for(options.mode),
            options.mode in ("rewrite", "lookup"),
            options.splice,
            options.language,
            examples,
            options.prompt_layout,
        )
        if key not in self._prefixes:
            fixed = list(fixed_prefix(lambda source, instruction: self.prompt(source, instruction, options)))
            self.llama.prefill(fixed)
            self._prefixes[key] = (fixed, self.llama.snapshot())
        fixed, snapshot = self._prefixes[key]
        if self.llama.cached[: len(fixed)] != fixed:
            self.llama.restore(snapshot)
        self.llama.truncate(len(fixed))  # nothing of an earlier edit stays

    def adapter_for(self, mode: str, task: str = "edit") -> Path | None:
        """The adapter ``mode`` runs with: in the program modes the selector of ``task`` (edit or
        apply: an apply without an apply selector runs the base model, never the edits'), else none."""
        chosen = self.apply_selector if task == "apply" else self.selector
        return chosen.path if chosen is not None and mode in ("program", "forced") else None

    def examples_for(self, options: EditOptions) -> str:
        """The few-shot set of an edit's prompt: the selector's where its adapter runs and the
        options name none, else :attr:`~copyedit_lsp.edit.EditOptions.prompt_examples`."""
        if options.examples is None and self.selector is not None and self.adapter_for(options.mode) is not None:
            return self.selector.examples
        return options.prompt_examples

    def prepare(self, mode: str, task: str = "edit") -> None:
        """Set the model's adapter for ``mode`` and ``task`` (:meth:`adapter_for`; a change empties
        the KV cache)."""
        self.llama.use_adapter(self.adapter_for(mode, task))

    def _check_fits(self, run: TokenRun, prompt: list[int], source_tokens: int, options: EditOptions) -> None:
        """Fail before decoding when the prompt and text cannot fit; set the edit's token budget."""
        run.budget = options.budget(source_tokens)
        need = len(prompt) + source_tokens + 64
        if self.llama.make_room(need + run.budget):
            self._prefixes.clear()  # saved with the context the model was reloaded without
        if need > self.llama.n_ctx:
            raise ContextOverflow(
                f"the prompt ({len(prompt)} tokens) and the text to edit ({source_tokens} tokens) "
                f"do not fit the model's context of {self.llama.n_ctx} tokens: "
                + ("edit a smaller range" if self.llama.growable else "edit a smaller range or raise n_ctx")
            )

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
        self._check_fits(run, prompt, len(drafter.lookup.original) + changed_tokens, options)
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
        (:func:`~copyedit_lsp.edit.repeats_input`).  A ``<gen>`` that begins a line after the first
        closes the gen and opens the next: the context then reads ``</gen>\\n<gen>\\n`` there.

        Drafts come from :meth:`~copyedit_lsp.drafts.ProgramDrafter.in_gen`."""
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
        openings = self.opening_mask.excluded(body)
        unchanged = self._unchanged_gen_masks(body, at) if at is not None else []
        return [*openings, *unchanged] if unchanged else openings

    @functools.cached_property
    def opening_mask(self) -> OpeningMask:
        """The unescaped openings' masks over this model's vocabulary (built at the first gen)."""
        return OpeningMask(self.pieces)

    @functools.cached_property
    def pieces(self) -> list[bytes]:
        """Every token's bytes, read once for the masks that scan the vocabulary."""
        return [self.llama.piece(token) for token in range(self.llama.n_vocab)]

    @functools.cached_property
    def padded_closes(self) -> list[int]:
        """The tokens that begin ``</gen>`` after whitespace in one piece (a scan of the vocabulary,
        at the first gen that needs it)."""
        return _padded_closes(self.pieces)

    @functools.cached_property
    def unchanged_gen_ends(self) -> list[int]:
        """What a gen that changes nothing may not write where a line starts: the start of its end
        (alone or after whitespace in one token), or the turn's end."""
        return [*self.tokens.gen_close_starts, *self.padded_closes, *self.llama.end_of_generation]

    def _unchanged_gen_masks(self, body: bytes, at: tuple[SourceView, int]) -> list[int]:
        """What a gen ``body`` written before input line ``at[1]`` may not write next where a line
        starts (or holds only whitespace) while the gen changes nothing
        (:func:`~copyedit_lsp.edit.repeats_input`): its end, or the end of the turn."""
        view, line = at
        cut = body.rfind(b"\n") + 1
        head, tail = body[:cut], body[cut:]
        if not tail.strip():
            repeats = repeats_input(view, head.decode("utf-8", errors="replace"), line)
            return self.unchanged_gen_ends if repeats else []
        # mid-line: "\n</" would end this line and the gen at once; the line itself is compared
        # first, so the whole gen is read again only where the line repeats the input's
        at_line = line - 1 + head.count(b"\n")
        if at_line >= len(view.lines) or view.lines[at_line] != (tail + b"\n").decode("utf-8", errors="replace"):
            return []
        return self.padded_closes if repeats_input(view, (body + b"\n").decode("utf-8", errors="replace"), line) else []

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
        self._check_fits(run, prompt, len(original), options)
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


RANK_TAIL = 8  # tokens of the placements' common ending scored with each (how it follows what differs)
RANK_CHUNK = 64  # rows of logits a score evaluates at once


def _common(answers: Sequence[Sequence[int]]) -> int:
    """How many tokens every one of ``answers`` opens with."""
    shortest = min(map(len, answers))
    return next((i for i in range(shortest) if len({a[i] for a in answers}) > 1), shortest)


def _log_likelihood(llama: LlamaModel, logits: np.ndarray, tokens: Sequence[int]) -> float:
    """The log-likelihood of ``tokens`` after the cache (``logits``: its last row), evaluated
    :data:`RANK_CHUNK` rows at a time."""
    if not tokens:
        return 0.0
    total = _log_softmax(logits[None, :], tokens[:1])
    for start in range(0, len(tokens) - 1, RANK_CHUNK):
        chunk = tokens[start : min(start + RANK_CHUNK, len(tokens) - 1)]
        total += _log_softmax(llama.eval(chunk, logits_from=0), tokens[start + 1 : start + 1 + len(chunk)])
    return total


def _log_softmax(rows: np.ndarray, targets: Sequence[int]) -> float:
    """The summed log-probabilities of ``targets``, one per row of logits."""
    top = rows.max(axis=1)
    normal = top + np.log(np.exp(rows - top[:, None]).sum(axis=1))
    return float((rows[np.arange(len(targets)), list(targets)] - normal).sum())
