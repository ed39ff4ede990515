"""The remote backend: edits decoded by an OpenAI-compatible completions server.

The program loop is the decoder's, one request per copy: the prompt is the edit's prompt so
far, the grammar (:func:`~copyedit_lsp.core.grammar.op_grammar`) admits gens and then one op (or, with
``Endpoint.gens_per_request`` off, exactly one op), and the server stops where the grammar does.
A copy ends a request and is spliced by appending the copied lines to the next request's prompt,
so the server's prefix cache evaluates only what is new (the tag and the lines) in one prefill.
Answers stream, so progress shows and closing the stream cancels.

Engines: ``llama.cpp`` (llama-server and llama-cpp-python's server: ``grammar`` and
``cache_prompt`` fields) and ``vllm`` (0.10.2 or later: ``structured_outputs.grammar``,
automatic prefix caching), spoken to by :mod:`.completions`.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..core.change import Change
from ..core.grammar import choice_grammar, gen_rest_grammar, literal_grammar, op_grammar
from ..core.program import (
    CHANGE_COPY_OPEN,
    COPY_CLOSE,
    COPY_OPEN,
    GEN_CLOSE,
    GEN_OPEN,
    PROGRAM_CLOSE,
    ChangeCopy,
    Copy,
    Gen,
    Op,
    Program,
    unescape,
)
from .completions import API_KEY_VARIABLE, Answer, Completions, Endpoint, RemoteError
from .edit import (
    MODES,
    EditOptions,
    EditResult,
    EditStats,
    EditWatch,
    ProgressCallback,
    StopFlag,
    answer_code,
    applied_otherwise,
    fall_back,
    fixed_prefix,
    repeats_input,
    rewritten_text,
)
from .prompt import WHOLE_FILE, ChatTemplate, SourceView, as_model_sees
from .writer import ProgramWriter

SERVED_MODES = tuple(mode for mode in MODES if mode != "lookup")  # a server drafts on its own
BYTES_PER_TOKEN = 3  # a cautious estimate for code: the edit's budget without the model's tokenizer
_COPY = re.compile(r'<copy (lines|change)="(\d+)-(\d+)"/>\n')


class _Session:
    """One edit's requests: they add up to its stats, stop with its stop flag, report its progress."""

    def __init__(self, remote: RemoteDecoder, watch: EditWatch):
        self.remote = remote
        self.watch = watch
        self.stats = watch.stats

    def complete(
        self, prompt: str, grammar: str | None, max_tokens: int, done: Callable[[Answer], bool] | None = None
    ) -> Answer:
        """One streamed request; it is closed early once ``done`` says the answer is complete."""
        self.watch.check_stop()
        started = time.perf_counter()
        chosen = self.stats.chosen_tokens

        def on_piece(answer: Answer) -> bool:
            self.stats.chosen_tokens = chosen + answer.pieces
            self.watch.check_stop()
            self.watch.tick()
            return done is not None and done(answer)

        try:
            answer = self.remote.completions.stream(
                prompt, grammar=grammar, max_tokens=max_tokens, model=self.remote.model, on_piece=on_piece
            )
        finally:
            self.stats.requests += 1
            self.stats.decode_seconds += time.perf_counter() - started
        self.stats.chosen_tokens = chosen + (answer.completion_tokens or answer.pieces)
        self.stats.prefill_tokens += answer.prompt_evaluated or 0
        self.stats.prefix_reused_tokens += answer.prompt_cached or 0
        return answer


class RemoteDecoder:
    """Edits text with a model served elsewhere; the same modes and results as :class:`Decoder`
    (but ``lookup``: a server does its own speculative decoding)."""

    def __init__(self, endpoint: Endpoint, *, max_gen_tokens: int = 512):
        self.completions = Completions(endpoint)
        self.template = ChatTemplate({})  # ChatML: the template of the Qwen2.5 family
        self.max_gen_tokens = max_gen_tokens
        self.model = endpoint.model

    @classmethod
    def connect(cls, endpoint: Endpoint) -> RemoteDecoder:
        """Check that the server answers and serves the model (the first it lists when none is named)."""
        if endpoint.api_key is None and os.environ.get(API_KEY_VARIABLE):
            endpoint = replace(endpoint, api_key=os.environ[API_KEY_VARIABLE])
        remote = cls(endpoint)
        try:
            models = remote.completions.models()
            if not models:
                raise RemoteError(f"the server at {endpoint.url} serves no model")
            if endpoint.model and endpoint.model not in models:
                raise RemoteError(f"the server at {endpoint.url} does not serve {endpoint.model!r}; it serves {models}")
        except Exception:
            remote.close()
            raise
        remote.model = endpoint.model or models[0]
        return remote

    @property
    def device(self) -> str:
        """The server and the model it runs the edits on."""
        return f"{self.model} at {self.completions.endpoint.url}"

    def close(self) -> None:
        self.completions.close()

    def warm(self, options: EditOptions) -> None:
        """Have the server's prefix cache hold the fixed prompt prefix of edits with ``options``
        (:class:`~copyedit_lsp.decode.edit.Editor`): one request for one token, not counted."""
        prefix = "".join(fixed_prefix(lambda source, instruction: self._prompt(source, instruction, options)))
        self.completions.stream(prefix, grammar=None, max_tokens=1, model=self.model, on_piece=lambda answer: False)

    def rank(
        self,
        source: str,
        change: Change,
        texts: Sequence[str],
        options: EditOptions = EditOptions(),
        instruction: str = "",
    ) -> list[float]:
        """Not on a completions server: it returns no prompt's log-likelihoods (:class:`RemoteError`)."""
        raise RemoteError("a completions server does not score texts: run the model locally to choose a placement")

    def choose(self, source: str, instruction: str, language: str, names: Sequence[str]) -> str | None:
        """The definition the instruction is about (:meth:`~copyedit_lsp.decode.edit.Editor.choose`): one
        request whose grammar admits only the names and the whole file."""
        pieces = {f"{name}`": name for name in (*names, WHOLE_FILE)}
        prompt = self.template.choice_prompt(source, instruction, language, names)
        session = _Session(self, EditWatch(EditStats(mode="choice"), None, None))
        answer = session.complete(prompt, choice_grammar(list(pieces)), max_tokens=64)
        chosen = pieces.get(answer.text)
        if chosen is None:
            raise RemoteError(
                f"the server's answer {answer.text[:80]!r} is none of the choices: it ignored the grammar"
            )
        return None if chosen == WHOLE_FILE else chosen

    def _prompt(self, source: str, instruction: str, options: EditOptions) -> str:
        return self.template.edit_prompt(
            source,
            instruction,
            mode=options.mode,
            splice=options.splice,
            language=options.language,
            examples=options.prompt_examples,
            layout=options.prompt_layout,
        )

    def edit(
        self,
        source: str,
        instruction: str,
        options: EditOptions = EditOptions(),
        *,
        stop: StopFlag | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> EditResult:
        """Edit ``source`` by ``instruction`` as the local decoder does, one request per copy
        (:class:`~copyedit_lsp.decode.edit.Editor`; the local decoder's speedups and copy check do not
        apply: a completions server returns no logits of the copied lines)."""
        options.check(SERVED_MODES, options.prompt_examples)
        started = time.perf_counter()
        session = _Session(self, EditWatch(EditStats(mode=options.mode, splice=options.splice), stop, on_progress))
        prompt = self._prompt(source, instruction, options)
        # the local decoder's budget, counted in all generated tokens, without the model's tokenizer
        budget = options.budget(len(source.encode()) / BYTES_PER_TOKEN)
        if options.mode == "rewrite":
            result = self._rewrite(session, prompt, source, budget, fenced=options.prompt_layout.fence)
        else:
            result = self._program(session, prompt, source, options, budget)
        session.stats.total_seconds = time.perf_counter() - started
        return fall_back(self, result, source, instruction, options, mode="rewrite", stop=stop, on_progress=on_progress)

    def apply(
        self,
        source: str,
        change: Change,
        options: EditOptions = EditOptions(),
        *,
        stop: StopFlag | None = None,
        on_progress: ProgressCallback | None = None,
        instruction: str = "",
        plan: Program | None = None,
    ) -> EditResult:
        """Merge ``change`` into ``source`` as the local decoder does
        (:meth:`~copyedit_lsp.decode.decoder.Decoder.apply`), one request per copy of the file or the
        change.  The server runs the base model, with no apply selector: program mode is a rewrite
        given the change (``stats.fallback``), unless ``options.fallback`` is off: then the base
        model writes the program.  The server drafts on its own (``plan`` is not sent)."""
        options.check(SERVED_MODES, "none")
        otherwise = applied_otherwise(self, source, change, options, rewrite="rewrite", selector=False,
                                      instruction=instruction, stop=stop, on_progress=on_progress)  # fmt: skip
        if otherwise is not None:
            return otherwise
        started = time.perf_counter()
        session = _Session(self, EditWatch(EditStats(mode=options.mode, splice=options.splice), stop, on_progress))
        prompt = self.template.apply_prompt(
            source, change, mode=options.mode, language=options.language, instruction=instruction
        )
        copied = source + change.text(1, len(change.lines))
        budget = options.budget(len(copied.encode()) / BYTES_PER_TOKEN)
        if options.mode == "rewrite":
            result = self._rewrite(session, prompt, source, budget, fenced=True)
        else:
            result = self._program(session, prompt, source, options, budget, change)
        session.stats.total_seconds = time.perf_counter() - started
        return result

    def _program(
        self,
        session: _Session,
        prompt: str,
        source: str,
        options: EditOptions,
        budget: int,
        change: Change | None = None,
    ) -> EditResult:
        """A program written over ``source`` one request per copy (an apply program where ``change``)."""
        writer = ProgramWriter.of(source, options, change)
        view, stats, scripted = writer.view, session.stats, options.program is not None
        cut, done = None, False
        while not done and stats.chosen_tokens < budget:
            room = budget - stats.chosen_tokens
            answer = session.complete(prompt, self._request_grammar(writer), min(self.max_gen_tokens, room))
            if answer.finish_reason == "length":  # the server stopped at max_tokens
                cut = "max_new_tokens" if room <= self.max_gen_tokens else "max_gen_tokens"
            for piece in _op_pieces(answer):
                rewritten = not scripted and piece.text.startswith(GEN_OPEN) and piece.text.endswith(GEN_CLOSE)
                if rewritten and repeats_input(view, piece.text[len(GEN_OPEN) : -len(GEN_CLOSE)], writer.after):
                    piece = self._write_on(session, prompt, piece, view, writer.after, budget)
                else:
                    rewritten = False
                op, ended = _read_op(piece, writer.lines, len(writer.change), writer.markers)
                if isinstance(op, Copy) and op.start < writer.first:
                    break  # drafted after a gen that moved the first line a copy may start at: asked again
                if op is None:
                    done = True
                    break
                prompt += piece.text
                if isinstance(op, Copy | ChangeCopy):
                    writer.copy(op)
                    if options.splice == "prefill":
                        prompt += (view if isinstance(op, Copy) else writer.changed).span(op.start, op.end)
                        stats.splice_calls += 1
                else:
                    ended = writer.gen(op.text) or ended
                stats.ops = len(writer.ops)
                session.watch.report(writer.ops)
                done = ended
                if done or rewritten:
                    break  # what the server wrote after a gen it was asked to write on is not taken
        cut = "max_new_tokens" if not done and stats.chosen_tokens >= budget else cut
        stats.ops = len(writer.ops)
        session.watch.report(writer.ops)  # the ops a break left unreported
        return EditResult(writer.program(), writer.text(), stats, cut=writer.cut or cut)

    def _request_grammar(self, writer: ProgramWriter) -> str:
        """The next request's grammar: the script's next op, or its gens up to its next copy and that
        copy; else one op of the program (:func:`~copyedit_lsp.core.grammar.op_grammar`), after any gens
        where a request runs through them."""
        through_gens = self.completions.endpoint.gens_per_request
        if writer.script is not None:
            rest = writer.rest()
            return literal_grammar(
                _to_next_copy(rest) if through_gens else _op_text(rest[0]) if rest else PROGRAM_CLOSE
            )
        return op_grammar(
            writer.lines,
            writer.first,
            after_gens=through_gens,
            n_change=len(writer.change),
            change_first=writer.change_after,
            markers=writer.markers,
        )

    def _write_on(
        self, session: _Session, prompt: str, answer: Answer, view: SourceView, line: int, budget: int
    ) -> Answer:
        """A gen ``answer`` that only repeats the input from ``line`` on, continued until it
        does not (:func:`~copyedit_lsp.decode.edit.repeats_input`): the gen cannot end there, so the server
        is asked for more of its lines.  The answer's text holds the whole gen."""
        text = answer.text
        while session.stats.chosen_tokens < budget:
            body = text[len(GEN_OPEN) : -len(GEN_CLOSE)]
            if not repeats_input(view, body, line):
                break
            room = budget - session.stats.chosen_tokens
            answer = session.complete(prompt + GEN_OPEN + body, gen_rest_grammar(), min(self.max_gen_tokens, room))
            text = GEN_OPEN + body + answer.text
            if not answer.text.endswith(GEN_CLOSE):
                break  # cut short: _read_op keeps the gen's whole lines
        answer.text = text
        return answer

    def _rewrite(self, session: _Session, prompt: str, source: str, budget: int, *, fenced: bool) -> EditResult:
        answer = session.complete(
            prompt, None, budget, done=lambda answer: answer_code(answer.text.encode(), fenced)[1]
        )
        code, closed = answer_code(answer.text.encode(), fenced)
        cut = None if closed or answer.finish_reason != "length" else "max_new_tokens"
        text = rewritten_text(code.decode("utf-8", errors="replace"), source)
        return EditResult(None, text, session.stats, cut=cut)


def _op_text(op: Op) -> str:
    """An op as the model writes it (a gen's text escaped, its line breaks ``\\n``)."""
    if isinstance(op, Copy | ChangeCopy):
        return op.to_text()
    return GEN_OPEN + as_model_sees(op.text) + GEN_CLOSE


def _to_next_copy(ops: Sequence[Op]) -> str:
    """The text of a script's ops up to its next copy and that copy, or to the program's end."""
    text = ""
    for op in ops:
        text += _op_text(op)
        if isinstance(op, Copy | ChangeCopy):
            return text
    return text + PROGRAM_CLOSE


def _op_pieces(answer: Answer) -> list[Answer]:
    """A grammar-constrained answer cut into its ops' texts, in order; only the last one may have
    been cut short (it keeps the answer's finish reason)."""
    text, pieces, at = answer.text, [], 0
    while at < len(text):
        if text.startswith(GEN_OPEN, at):
            end = text.find(GEN_CLOSE, at)
            end = len(text) if end < 0 else end + len(GEN_CLOSE)
        elif text.startswith((COPY_OPEN, CHANGE_COPY_OPEN), at):
            end = text.find(COPY_CLOSE, at)
            end = len(text) if end < 0 else end + len(COPY_CLOSE)
        else:
            end = len(text)  # the program's end, or what _read_op refuses
        pieces.append(Answer(text[at:end], finish_reason="stop"))
        at = end
    if not pieces:
        pieces.append(Answer(""))
    pieces[-1].finish_reason = answer.finish_reason
    return pieces


def _read_op(
    answer: Answer, n_lines: int, n_change: int = 0, markers: frozenset[int] = frozenset()
) -> tuple[Op | None, bool]:
    """The op a grammar-constrained answer holds and whether the program ends after it; None at
    the program's end.  A copy must lie in the file's ``n_lines`` or the change's ``n_change``
    lines (holding none of its ``markers``); an answer outside the grammar means the server
    ignored the grammar."""
    text = answer.text
    if answer.finish_reason == "length":  # out of tokens: keep a gen's whole lines, then stop
        if text.startswith(GEN_OPEN) and "\n" in text[len(GEN_OPEN) :]:
            body = text[len(GEN_OPEN) : text.rindex("\n") + 1]
            return Gen(unescape(body)), True
        return None, True
    if text == PROGRAM_CLOSE:
        return None, True
    if copy := _COPY.fullmatch(text):
        start, end = int(copy[2]), int(copy[3])
        if copy[1] == "lines" and 1 <= start <= end <= n_lines:
            return Copy(start, end), False
        if copy[1] == "change" and 1 <= start <= end <= n_change and not any(start <= m <= end for m in markers):
            return ChangeCopy(start, end), False
    if text.startswith(GEN_OPEN) and text.endswith(GEN_CLOSE) and len(text) > len(GEN_OPEN + GEN_CLOSE):
        body = text[len(GEN_OPEN) : -len(GEN_CLOSE)]
        return Gen(unescape(body)), not body.endswith(("\n", "\r"))
    raise RemoteError(
        f"the server's answer is not one op of the program grammar ({text[:80]!r}): it ignored the "
        "grammar; use a server with GBNF grammar support and the matching remote engine"
    )
