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

import bisect
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .adapters import Selector
from .backend import Backend
from .grammar import digit_choices
from .program import (
    COPY_CLOSE,
    COPY_OPEN,
    GEN_CLOSE,
    GEN_OPEN,
    PROGRAM_CLOSE,
    Copy,
    Gen,
    Op,
    Program,
    unescape,
)
from .prompt import (
    EXAMPLE_SETS,
    ChatTemplate,
    SourceView,
    as_model_sees,
)
from .resolver import resolve

MODES = ("program", "rewrite", "lookup", "forced")
SPLICES = ("prefill", "none")
PROGRESS_INTERVAL = 0.5  # seconds
GEN_WINDOW = 32  # tokens: a gen body is drafted from input near where it last matched


class DecodeError(RuntimeError):
    """An edit could not be decoded; nothing is returned."""


class ContextOverflow(DecodeError):
    """The prompt and document do not fit the model's context."""


class Cancelled(DecodeError):
    """The edit was cancelled; nothing is returned."""


@dataclass
class EditStats:
    """What an edit cost: tokens by kind, llama_decode calls and seconds by phase."""

    mode: str = "program"
    splice: str = "prefill"
    chosen_tokens: int = 0  # tokens the model chose
    decode_steps: int = 0  # llama_decode calls that gave a choice its logits (no splice in them)
    forced_tokens: int = 0  # tokens fixed by the grammar
    spliced_tokens: int = 0
    splice_calls: int = 0
    splice_spans: list[int] = field(default_factory=list)  # tokens of each spliced copy, in order
    splice_eval_calls: list[int] = field(default_factory=list)  # llama_decode calls each splice took
    eval_calls: int = 0
    prefill_tokens: int = 0  # prompt tokens evaluated
    prefix_reused_tokens: int = 0  # prompt tokens reused from the KV cache
    ops: int = 0
    requests: int = 0  # completion requests to a remote server (remote backend only)
    drafted_tokens: int = 0  # tokens guessed ahead (ops, gen bodies, lookup) and verified in a batch
    accepted_tokens: int = 0  # drafted tokens the decoder then forced or chose
    output_tokens: int = 0  # tokens of the edited region as the model would write it in full
    constraint_seconds: float = 0.0  # time spent computing masks and picking among candidates
    prefill_seconds: float = 0.0
    decode_seconds: float = 0.0
    splice_seconds: float = 0.0
    total_seconds: float = 0.0

    @property
    def prefix_cache_hit(self) -> bool:
        return self.prefix_reused_tokens > 0

    def to_dict(self) -> dict:
        return asdict(self) | {"prefix_cache_hit": self.prefix_cache_hit}


@dataclass
class EditResult:
    """The program (None in rewrite and lookup modes), the edited text, the stats, and the answer's
    tokens (program modes: the program as it stands in the context; rewrite and lookup: the code)."""

    program: Program | None
    text: str
    stats: EditStats
    tokens: tuple[int, ...] = ()


@dataclass(frozen=True)
class Speedups:
    """The decoder's CPU optimisations, each lossless in exact arithmetic and on by default.

    * ``force``: tokens the grammar leaves no choice about cost no decode step of their own;
    * ``merge``: forced pieces, a copy's spliced lines and what follows them up to the next
      choice are evaluated in one batch (off: each piece and each splice on its own);
    * ``draft_tags``: the next op's tag is guessed (after a gen, a copy from the line after what
      it rewrote to the end; after a copy, a gen) and verified in the same batch, so the op, its
      digits and the splice before it can cost one llama_decode call;
    * ``draft_gens``: gen bodies are drafted from the input by prompt lookup and verified in batches.

    A guess is only ever kept where the greedy decoder makes the same choice.
    """

    force: bool = True
    merge: bool = True
    draft_tags: bool = True
    draft_gens: bool = True


NO_SPEEDUPS = Speedups(force=False, merge=False, draft_tags=False, draft_gens=False)


class _Trie:
    """Token sequences of alternative pieces, to walk choosing only where they branch."""

    def __init__(self, pieces: dict[str, list[int]]):
        self.pieces = pieces

    def walk(self, run: _Run, target: str | None) -> str:
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
        (name, tokens), = alive.items()
        if depth < len(tokens):
            run.force(tokens[depth:])
        return name


class _Run:
    """The state of one edit: pending tokens, drafted tokens ahead, logits, counters, the stop flag.

    The current position is the end of the cache plus the pending tokens, which are evaluated
    only when logits are needed.  A draft is evaluated at once with logits at every drafted
    position and stays in the cache *ahead* of the current position: each token the decoder
    then forces or chooses either matches the draft's next token (its logits are already
    there: no step) or replaces the rest of the draft, which leaves the cache.
    """

    def __init__(
        self,
        backend: Backend,
        stats: EditStats,
        *,
        stop: Callable[[], bool] | None,
        force: bool,
        merge: bool,
        on_progress: Callable[[EditStats], None] | None = None,
    ):
        self.backend = backend
        self.on_progress = on_progress
        self.reported = time.perf_counter()
        self.stats = stats
        self.stop = stop
        self.free_forced = force
        self.merge = merge
        self.pending: list[int] = []
        self.pending_splice = 0  # how many pending tokens are spliced text
        self.logits: np.ndarray | None = None  # after the last cached token, valid when nothing is pending
        self.ahead: list[int] = []  # drafted tokens in the cache past the current position
        self.ahead_logits: list[np.ndarray] = []  # the logits after each of them
        self.budget = 0  # tokens this edit may choose

    def check_stop(self) -> None:
        if self.stop is not None and self.stop():
            raise Cancelled("the edit was cancelled")

    def prefill(self, tokens: list[int]) -> None:
        self.check_stop()
        started = time.perf_counter()
        calls = self.backend.counters.calls
        self.logits, reused = self.backend.prefill(tokens)
        self.stats.prefill_tokens += len(tokens) - reused
        self.stats.prefix_reused_tokens += reused
        self.stats.eval_calls += self.backend.counters.calls - calls
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
        self.backend.truncate(len(self.backend.cached) - len(self.ahead))
        self.ahead, self.ahead_logits = [], []

    def force(self, tokens: Sequence[int]) -> None:
        """Tokens the grammar leaves no choice about: fed with the next evaluation (``force``), or
        each at the cost of a step; with ``merge`` off, a piece is evaluated on its own."""
        self.stats.forced_tokens += len(tokens)
        if not self.merge:
            self.flush()
        for token in tokens:
            if not self.free_forced:
                self.flush()
            self._take(token)

    def splice(self, tokens: Sequence[int]) -> None:
        """A closed copy's lines: evaluated in one batch with what is pending around them."""
        self.stats.spliced_tokens += len(tokens)
        self.stats.splice_calls += 1
        self.stats.splice_spans.append(len(tokens))
        if not self.merge:
            self.flush()
        before = len(self.pending)
        for token in tokens:
            self._take(token)
        self.pending_splice += len(self.pending) - before
        if not self.merge:
            self.flush()

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

    def _eval(self, draft: Sequence[int]) -> None:
        self.check_stop()
        if not self.pending and self.logits is None:  # the last token was taken back: evaluate it again
            self.pending = [self.backend.cached[-1]]
            self.backend.truncate(len(self.backend.cached) - 1)
        tokens = [*self.pending, *draft]
        if len(self.backend.cached) + len(tokens) > self.backend.n_ctx:
            raise ContextOverflow(f"the edit ran out of the model's context ({self.backend.n_ctx} tokens)")
        started = time.perf_counter()
        calls = self.backend.counters.calls
        rows = list(self.backend.eval(tokens, logits_from=max(len(self.pending) - 1, 0)))
        if self.pending:
            self.logits = rows.pop(0)
        self.ahead, self.ahead_logits = list(draft), rows
        used = self.backend.counters.calls - calls
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
            self.backend.truncate(len(self.backend.cached) - 1)
            self.logits = None

    def answer(self, start: int) -> tuple[int, ...]:
        """The tokens from ``start`` to the current position; a draft left over leaves the cache.
        The last pending tokens are never evaluated: no choice follows them."""
        self._drop_draft()
        return (*self.backend.cached[start:], *self.pending)

    def room(self) -> int:
        """Tokens the context can still take, less a reserve to close the program."""
        return self.backend.n_ctx - (len(self.backend.cached) - len(self.ahead)) - len(self.pending) - 32

    def choose(self, candidates: Sequence[int] | None, wanted: int | None = None) -> int:
        """The greedy token among ``candidates`` (all when None), or ``wanted``; it costs a decode
        step unless a draft already holds this position's logits."""
        if self.pending or self.logits is None:
            self._eval(())
        started = time.perf_counter()
        if wanted is not None:
            token = wanted
        elif candidates is None:
            token = int(np.argmax(self.logits))
        else:
            token = int(candidates[int(np.argmax(self.logits[list(candidates)]))])
        if candidates is not None:
            self.stats.constraint_seconds += time.perf_counter() - started
        self.stats.chosen_tokens += 1
        self._take(token)
        if time.perf_counter() - self.reported > PROGRESS_INTERVAL:
            self.report()
        return token

    def report(self) -> None:
        """Tell the caller how far the edit is (after each op, and at least every PROGRESS_INTERVAL)."""
        self.reported = time.perf_counter()
        if self.on_progress is not None:
            self.on_progress(self.stats)


class Decoder:
    """Edits text with one loaded model; keeps the prompt prefix cached between edits."""

    def __init__(
        self,
        backend: Backend,
        *,
        selector: Selector | None = None,
        max_gen_tokens: int = 512,
        max_new_tokens: int = 4096,
        draft_tokens: int = 16,
        draft_ngram: int = 3,
    ):
        self.backend = backend
        self.selector = selector  # the trained span selector of the program modes, if any
        self.draft_tokens = draft_tokens
        self.draft_ngram = draft_ngram
        self.template = ChatTemplate(backend.metadata)
        self.max_gen_tokens = max_gen_tokens
        self.max_new_tokens = max_new_tokens
        tokenize = backend.tokenize
        self.op_pieces = {"copy": tokenize(COPY_OPEN), "gen": tokenize(GEN_OPEN), "end": tokenize(PROGRAM_CLOSE)}
        self.digits = {c: tokenize(c) for c in "0123456789"}
        if any(len(t) != 1 for t in self.digits.values()):
            raise DecodeError("the model's tokenizer has no single-token digits")
        self.digit_token = {c: t[0] for c, t in self.digits.items()}
        self.dash = tokenize("-")
        self.copy_close = tokenize(COPY_CLOSE)
        self.newline = tokenize("\n")
        self.gen_close = tokenize(GEN_CLOSE)

    @classmethod
    def load(
        cls,
        model: str,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_gpu_layers: int = 0,
        batch_invariant: bool = False,
        adapter: str = "default",
        fetch_missing: bool = True,
        progress: bool = False,
    ) -> Decoder:
        """Load a model by name (fetched from PyPI when missing) or GGUF path (``batch_invariant``:
        see :class:`~copyedit_lsp.backend.Backend`) and the span selector ``adapter`` names
        (:func:`~copyedit_lsp.adapters.resolve_selector`)."""
        from .adapters import resolve_selector
        from .models import resolve_model

        selector = resolve_selector(adapter, model)
        path = resolve_model(model, fetch_missing=fetch_missing, progress=progress)
        backend = Backend(path, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers,
                          batch_invariant=batch_invariant)
        if selector is not None:
            try:
                backend.use_adapter(selector.path)  # a bad adapter fails the load, not the first edit
            except Exception:
                backend.close()
                raise
        return cls(backend, selector=selector)

    def close(self) -> None:
        """Free the model."""
        self.backend.close()

    def edit(
        self,
        source: str,
        instruction: str,
        *,
        mode: str = "program",
        splice: str = "prefill",
        language: str = "",
        program: Program | None = None,
        speedups: Speedups = Speedups(),
        ordered: bool = True,
        examples: str | None = None,
        stop: Callable[[], bool] | None = None,
        on_progress: Callable[[EditStats], None] | None = None,
    ) -> EditResult:
        """Edit ``source`` by ``instruction``; ``program`` is the script of ``forced`` mode.

        ``speedups`` picks the CPU optimisations (all on by default); ``ordered`` makes every copy
        start after the previous copy's last line; ``examples`` names the prompt's few-shot set
        (:data:`EXAMPLE_SETS`; None: the selector's in program modes, else ``default``).  Program
        modes run with the span selector's adapter, rewrite and lookup with the base model.
        """
        examples = self.examples_for(mode, examples)
        check_edit(mode, splice, examples, program, MODES)
        self.prepare(mode)
        started = time.perf_counter()
        stats = EditStats(mode=mode, splice=splice)
        run = _Run(self.backend, stats, stop=stop, force=speedups.force, merge=speedups.merge, on_progress=on_progress)
        prompt = self.prompt(source, instruction, mode=mode, splice=splice, language=language, examples=examples)
        if mode in ("rewrite", "lookup"):
            result = self._rewrite(run, prompt, source, lookup=mode == "lookup")
        else:
            result = self._program(run, prompt, source, splice, program, ordered, speedups)
        stats.total_seconds = time.perf_counter() - started
        return result

    def prompt(
        self,
        source: str,
        instruction: str,
        *,
        mode: str = "program",
        splice: str = "prefill",
        language: str = "",
        examples: str | None = None,
    ) -> list[int]:
        """The prompt's tokens for an edit: the conversation and the opening of the answer."""
        examples = self.examples_for(mode, examples)
        text = self.template.edit_prompt(source, instruction, mode=mode, splice=splice, language=language, examples=examples)
        return self.backend.tokenize(text, special=True)

    def adapter_for(self, mode: str) -> Path | None:
        """The adapter ``mode`` runs with: the selector's in the program modes, else none."""
        return self.selector.path if self.selector is not None and mode in ("program", "forced") else None

    def examples_for(self, mode: str, examples: str | None) -> str:
        """``examples``, or when None the few-shot set ``mode``'s prompt uses with this decoder."""
        if examples is not None:
            return examples
        return self.selector.examples if self.adapter_for(mode) is not None else "default"

    def prepare(self, mode: str) -> None:
        """Set the model's adapter for ``mode`` (a change empties the KV cache)."""
        self.backend.use_adapter(self.adapter_for(mode))

    def _out_of_budget(self, run: _Run) -> bool:
        return run.stats.chosen_tokens >= run.budget or run.room() <= 0

    def _check_fits(self, run: _Run, prompt: list[int], source_tokens: int) -> None:
        """Fail before decoding when the prompt and text cannot fit; set the edit's token budget."""
        run.budget = min(self.max_new_tokens, 2 * source_tokens + 128)
        need = len(prompt) + source_tokens + 64
        if need > self.backend.n_ctx:
            raise ContextOverflow(
                f"the prompt ({len(prompt)} tokens) and the text to edit ({source_tokens} tokens) "
                f"do not fit the model's context of {self.backend.n_ctx} tokens: "
                "edit a smaller range or raise n_ctx"
            )

    def _program(
        self,
        run: _Run,
        prompt: list[int],
        source: str,
        splice: str,
        target: Program | None,
        ordered: bool,
        speedups: Speedups,
    ) -> EditResult:
        view = SourceView.of(source)
        n = len(view.lines)
        if target is not None:
            target.validate(n)
        drafter = _Drafter(self, view)
        self._check_fits(run, prompt, len(drafter.lookup.original))
        if target is not None:  # a script is as long as it is
            run.budget = self.max_new_tokens
        run.prefill(prompt)
        tries = {True: _Trie(self.op_pieces), False: _Trie({k: v for k, v in self.op_pieces.items() if k != "copy"})}
        ops: list[Op] = []
        first = 1  # the first line a copy may start at
        while True:
            goal = target.ops[len(ops)] if target is not None and len(ops) < len(target.ops) else None
            if self._out_of_budget(run):
                run.force(self.op_pieces["end"])
                break
            if speedups.draft_tags:
                run.draft(drafter.next_op(ops[-1] if ops else None, with_body=speedups.draft_gens))
            kind = tries[first <= n].walk(run, None if target is None else "end" if goal is None else type(goal).__name__.lower())
            if kind == "end":
                break
            if kind == "copy":
                start = self._number(run, first, n, self.dash, goal.start if goal else None)
                end = self._number(run, start, n, self.copy_close, goal.end if goal else None)
                first = end + 1 if ordered else 1
                if splice == "prefill":
                    run.splice(self.backend.tokenize(view.span(start, end)))
                ops.append(Copy(start, end))
                drafter.line = end + 1
            else:
                text, ended = self._gen_body(run, goal.text if goal else None, drafter, speedups)
                if text:
                    ops.append(Gen(text))
                drafter.line = drafter.resume_line(text)
                if ended:
                    break
            run.stats.ops = len(ops)
            run.report()
        tokens = run.answer(len(prompt))
        program = Program(tuple(_whole_lines(ops, _newline_of(source))))
        text = resolve(program, source)
        run.stats.output_tokens = len(self.backend.tokenize(text)) if text else 0
        return EditResult(program, text, run.stats, tokens)

    def _number(self, run: _Run, lo: int, hi: int, terminator: list[int], goal: int | None) -> int:
        """Write a number in [lo, hi] digit by digit, then the terminator; return the number."""
        prefix = ""
        goal_text = None if goal is None else str(goal)
        while True:
            started = time.perf_counter()
            digits, can_end = digit_choices(prefix, lo, hi)
            options = {self.digit_token[c]: c for c in digits} | ({terminator[0]: ""} if can_end else {})
            run.stats.constraint_seconds += time.perf_counter() - started
            want = None
            if goal_text is not None:
                want = self.digit_token[goal_text[len(prefix)]] if len(prefix) < len(goal_text) else terminator[0]
            if len(options) == 1:
                (token,) = options
                run.force([token])
            else:
                token = run.choose(list(options), want)
            if want is not None and token != want:
                raise DecodeError(f"the scripted number {goal} is outside {lo}..{hi}")
            if not options[token]:
                run.force(terminator[1:])
                return int(prefix)
            prefix += options[token]

    def _gen_body(self, run: _Run, goal: str | None, drafter: _Drafter, speedups: Speedups) -> tuple[str, bool]:
        """Decode a gen body freely until ``</gen>``; return it and whether the model ended its turn.

        Drafts come from :meth:`_Drafter.in_gen`."""
        script = iter(self.backend.tokenize(as_model_sees(goal) + GEN_CLOSE)) if goal is not None else None
        body = b""
        written: list[int] = []
        drafter.lookup.restart(drafter.token_of_line(drafter.line))
        for _ in range(self.max_gen_tokens):
            if self._out_of_budget(run):
                break
            if not run.ahead:
                run.draft(drafter.in_gen(written, body, run.room(), speedups))
            token = run.choose(None, next(script) if script is not None else None)
            if self.backend.is_end_of_generation(token):
                run.retract()  # the end of the turn never enters the cache
                return _decode_body(body), True
            written.append(token)
            started = time.perf_counter()  # watching for the end of the gen is part of the constraint
            piece = self.backend.piece(token)
            body += piece
            close = body.find(b"</gen>", max(0, len(body) - len(piece) - 6))
            run.stats.constraint_seconds += time.perf_counter() - started
            if close >= 0:
                rest = body[close + 6 :]  # make the context read exactly "</gen>\n"
                if not rest:
                    run.force(self.newline)
                elif rest != b"\n":
                    run.retract()
                    kept = piece[: len(piece) - len(rest)].decode("utf-8", errors="ignore")
                    run.force(self.backend.tokenize(kept + "\n"))
                return _decode_body(body[:close]), False
        # a length or context cap: close the gen on a whole line
        tail = "" if body.endswith(b"\n") else "\n"
        run.force(self.backend.tokenize(tail + GEN_CLOSE))
        return _decode_body(body) + tail, False

    def _rewrite(self, run: _Run, prompt: list[int], source: str, *, lookup: bool) -> EditResult:
        original = self.backend.tokenize(source)
        self._check_fits(run, prompt, len(original))
        run.prefill(prompt)
        out = b""
        written: list[int] = []
        drafts = _Lookup(original, self.draft_ngram, self.draft_tokens) if lookup else None
        while len(written) < run.budget and run.room() > 0:
            if drafts:
                run.draft(drafts.draft(written, min(run.budget - len(written), run.room()) - 1))
            token = run.choose(None)
            if self.backend.is_end_of_generation(token):
                break
            written.append(token)
            out += self.backend.piece(token)
            fence = fence_at(out)
            if fence >= 0:
                out = out[:fence]
                break
        run.answer(len(prompt))
        text = rewritten_text(out.decode("utf-8", errors="replace"), source)
        run.stats.output_tokens = len(written)
        return EditResult(None, text, run.stats, tuple(written))


class _Lookup:
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


class _Drafter:
    """Guesses of a program's next tokens: the next op's tag, and (by :class:`_Lookup`) gen bodies."""

    def __init__(self, decoder: Decoder, view: SourceView):
        self.decoder = decoder
        self.view = view
        self.line = 1  # the first input line the program has not yet copied or rewritten
        self.lookup = _Lookup(
            decoder.backend.tokenize("".join(view.lines)), decoder.draft_ngram, decoder.draft_tokens, window=GEN_WINDOW
        )
        offsets = list(itertools.accumulate((len(decoder.backend.piece(t)) for t in self.lookup.original), initial=0))
        lines = itertools.accumulate((len(line.encode()) for line in view.lines), initial=0)
        self.line_tokens = [bisect.bisect_left(offsets, offset) for offset in lines]
        self.line_ends = {t for t in set(self.lookup.original) if b"\n" in decoder.backend.piece(t)}
        self.input_lines = set(view.lines)

    def token_of_line(self, line: int) -> int:
        """The index of the first input token at or after the start of ``line``."""
        return self.line_tokens[min(line, len(self.view.lines) + 1) - 1]

    def next_op(self, last: Op | None, *, with_body: bool) -> list[int]:
        """After a copy, a gen (and the start of its body); else a copy from the current line to the end."""
        decoder = self.decoder
        if not isinstance(last, Copy):
            return self.copy_tag(self.line)
        if self.line > len(self.view.lines):
            return []
        if not with_body:
            return decoder.op_pieces["gen"]
        self.lookup.restart(self.token_of_line(self.line))
        return [*decoder.op_pieces["gen"], *self._to_line_end(self.lookup.draft([], decoder.draft_tokens))]

    def in_gen(self, written: list[int], body: bytes, room: int, speedups: Speedups) -> list[int]:
        """The draft inside a gen body: with ``draft_tags``, the end of the gen and the copy after it
        once the body reads ``</`` or has just ended a line that is not an input line (a rewritten
        line: minimal programs go back to copying); with ``draft_gens``, the input by prompt lookup,
        to the end of its line unless the body's last line was an input line."""
        close = self.decoder.gen_close
        if speedups.draft_tags and written and written[-1] == close[0]:
            text = _decode_body(body[: -len(self.decoder.backend.piece(close[0]))])
            return [*close[1:], *self.copy_tag(self.resume_line(text))]
        if speedups.draft_tags and body.endswith(b"\n") and self._rewritten(body):
            return [*close, *self.copy_tag(self.resume_line(_decode_body(body)))]
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
        last = body[: -1].rsplit(b"\n", 1)[-1].decode("utf-8", errors="replace") + "\n"
        return last not in self.input_lines

    def copy_tag(self, start: int) -> list[int]:
        """``<copy lines="start-N"/>``, N the last line (nothing when ``start`` is past it)."""
        n = len(self.view.lines)
        if not 1 <= start <= n:
            return []
        d = self.decoder
        return [*d.op_pieces["copy"], *(d.digit_token[c] for c in str(start)), *d.dash,
                *(d.digit_token[c] for c in str(n)), *d.copy_close]

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


def check_edit(mode: str, splice: str, examples: str, program: Program | None, modes: Sequence[str]) -> None:
    """Raise ValueError unless an edit's mode is one of ``modes``, its splice and example set known,
    and a program given exactly in forced mode."""
    if mode not in modes or splice not in SPLICES or examples not in EXAMPLE_SETS:
        raise ValueError(f"mode must be one of {tuple(modes)}, splice one of {SPLICES}, examples one of {tuple(EXAMPLE_SETS)}")
    if (mode == "forced") != (program is not None):
        raise ValueError("forced mode, and only forced mode, takes a program")


def fence_at(code: bytes) -> int:
    """Where a rewrite's code block closes (a line that starts with three backticks), or -1."""
    return (b"\n" + code).find(b"\n```")


def rewritten_text(code: str, source: str) -> str:
    """A rewrite's code block as the edited text: the source's line breaks, and no final line
    break where the source has none."""
    if not source.endswith(("\n", "\r")) and code.endswith("\n"):
        code = code[:-1]
    return _with_newline(code, _newline_of(source))


def _decode_body(body: bytes) -> str:
    return unescape(body.decode("utf-8", errors="replace"))


def _newline_of(source: str) -> str:
    """The document's line break: ``\\r\\n`` if most of its lines use it, else ``\\n``."""
    crlf = source.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= source.count("\n") else "\n"


def _with_newline(text: str, newline: str) -> str:
    return text.replace("\n", newline) if newline != "\n" else text


def _whole_lines(ops: list[Op], newline: str) -> list[Op]:
    """Gens in the document's line breaks; every gen but the last ends with one."""
    fixed: list[Op] = []
    for i, op in enumerate(ops):
        if isinstance(op, Gen):
            text = _with_newline(op.text, newline)
            if i < len(ops) - 1 and not text.endswith(("\n", "\r")):
                text += newline
            op = Gen(text)
        fixed.append(op)
    return fixed
