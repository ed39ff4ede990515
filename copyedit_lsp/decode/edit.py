"""The edit contract: what every decoder takes, returns and raises.

:class:`Editor` is the one interface of the local decoder (:class:`~copyedit_lsp.decode.decoder.Decoder`)
and the remote one (:class:`~copyedit_lsp.decode.remote.RemoteDecoder`): ``edit(source, instruction,
options)`` gives an :class:`EditResult` or raises a :class:`DecodeError`.  The helpers that turn
a decoded program or rewrite into the edited text live here too, so the two decoders are siblings
that share this module and nothing else.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Protocol, TypeVar

from ..core.asked import mismatch
from ..core.change import Change, ended_text, ending_as
from ..core.loss import Loss, lost_code
from ..core.program import Op, Program
from ..core.scope import adds_syntax_errors
from .prompt import EXAMPLE_SETS, Layout, SourceView, default_layout

DEFAULT_MODEL = "qwen2.5-coder-1.5b"  # the model an edit runs on unless a setting names another
MODES = ("program", "rewrite", "lookup", "forced")
SPLICES = ("prefill", "none")
REMOTE_ENGINES = ("llama.cpp", "vllm")  # how a remote program request sends its grammar
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
    doubted_copies: int = 0  # copies the model's check stopped early (EditOptions.copy_check)
    output_tokens: int = 0  # tokens of the edited region as the model would write it in full
    constraint_seconds: float = 0.0  # time spent computing masks and picking among candidates
    prefill_seconds: float = 0.0
    decode_seconds: float = 0.0
    splice_seconds: float = 0.0
    total_seconds: float = 0.0
    fallback: str | None = None  # why program mode's result gave way to a rewrite (FALLBACKS), if it did
    candidates: int = 0  # placements the model chose between (structure left a choice), else 0
    margin: float | None = None  # the chosen placement's log-likelihood over the next one's

    @property
    def prefix_cache_hit(self) -> bool:
        return self.prefix_reused_tokens > 0

    def plus(self, other: EditStats) -> EditStats:
        """These figures and ``other``'s added up (counts, seconds and spans; the mode stays these')."""
        added = {
            f.name: getattr(self, f.name) + getattr(other, f.name)
            for f in fields(self)
            if isinstance(getattr(self, f.name), int | float | list) and not isinstance(getattr(self, f.name), bool)
        }
        return replace(self, **added)

    def to_dict(self) -> dict[str, object]:
        return asdict(self) | {"prefix_cache_hit": self.prefix_cache_hit}


@dataclass
class EditResult:
    """The program (None in rewrite and lookup modes), the edited text, the stats, and the answer's
    tokens (program modes: the program as it stands in the context; rewrite and lookup: the code).

    ``cut`` says why the model's output was cut short, when it was (:data:`CUTS`): the text is then
    not the edit the model meant and must not be applied as one."""

    program: Program | None
    text: str
    stats: EditStats
    tokens: tuple[int, ...] = ()
    cut: str | None = None
    replaced: Program | None = None  # program mode's own program, where a rewrite replaced it (stats.fallback)
    loss: Loss | None = None  # code the text drops that the instruction did not ask to drop (never offered by default)
    mismatch: str | None = None  # why the text is not what the instruction asks, where the code tells (never offered)

    @property
    def complete(self) -> bool:
        return self.cut is None


# Why an output can be cut short: the model's context ran out, the edit's token budget
# (maxNewTokens) was spent, or one gen reached the decoder's cap on a gen's length.
CUTS = {
    "context": "the model's context ran out (raise nCtx or edit a smaller range)",
    "max_new_tokens": "the output reached maxNewTokens (raise it or edit a smaller range)",
    "max_gen_tokens": "one generated block reached the decoder's length cap",
    "repeated": "the model wrote the same lines again and again (try another instruction or range)",
}

# Why program mode's result gives way to a rewrite (EditOptions.fallback).
FALLBACKS = {
    "cut": "the program was cut short",
    "syntax": "the program's text parses worse than the original",
    "loss": "the program dropped code the instruction did not ask to drop",
    "unchanged": "the program changed nothing (but whitespace at line ends)",
    "mismatch": "the program is not what the instruction asks (a definition it asks to add missing, or code changed "
    "where it asks for documentation alone)",
    "selector": "the model has no apply selector: the change was merged by a lookup rewrite",
}


@dataclass(frozen=True)
class Speedups:
    """The local decoder's CPU optimisations, each lossless in exact arithmetic and on by default.

    * ``force``: tokens the grammar leaves no choice about cost no decode step of their own;
    * ``batch``: forced pieces, a copy's spliced lines and what follows them up to the next
      choice are evaluated in one batch (off: each piece and each splice on its own);
    * ``draft_tags``: the next op's tag is guessed (after a gen, a copy from the line after what
      it rewrote to the end; after a copy, a gen) and verified in the same batch, so the op, its
      digits and the splice before it can cost one llama_decode call;
    * ``draft_gens``: gen bodies are drafted from the input by prompt lookup and verified in batches.

    A guess is only ever kept where the greedy decoder makes the same choice.  A remote server
    does its own speculative decoding: the remote decoder ignores these.
    """

    force: bool = True
    batch: bool = True
    draft_tags: bool = True
    draft_gens: bool = True


NO_SPEEDUPS = Speedups(force=False, batch=False, draft_tags=False, draft_gens=False)

# The least probability a copied token may have under the model unless it is the model's first
# choice (EditOptions.copy_check), chosen on synthetic training-style edits, never on evaluation data.
COPY_CHECK = 0.05


@dataclass(frozen=True)
class EditOptions:
    """How to decode one edit.

    ``program`` is the script of ``forced`` mode (and only of it); ``ordered`` makes every copy
    start after the previous copy's last line; ``examples`` names the prompt's few-shot set
    (:data:`~copyedit_lsp.decode.prompt.EXAMPLE_SETS`; None: the decoder's choice for the mode);
    ``max_new_tokens`` caps the tokens the model may write; ``copy_check``, when above 0, has the
    model check each copy as it is spliced (:class:`~copyedit_lsp.decode.tokens.CopyCheck`): a copied
    token less probable than this and not the model's first choice ends the copy before its line;
    ``fallback`` has program mode decode the edit again as a rewrite by the base model where its
    program was cut short or its text parses worse than the original (:func:`fall_back`);
    ``layout`` lays out the prompt (None: :attr:`prompt_layout`).
    """

    mode: str = "program"
    splice: str = "prefill"
    language: str = ""
    program: Program | None = None
    ordered: bool = True
    examples: str | None = None
    speedups: Speedups = Speedups()
    max_new_tokens: int = 4096
    copy_check: float = COPY_CHECK
    fallback: bool = True
    layout: Layout | None = None

    @property
    def prompt_examples(self) -> str:
        """The prompt's few-shot set: these options', else none in rewrite and lookup (the plain
        request the model answers best: ``bench edits --layout``'s ablation), else the default set."""
        if self.examples is not None:
            return self.examples
        return "none" if self.mode in ("rewrite", "lookup") else "default"

    @property
    def prompt_layout(self) -> Layout:
        """The layout of the prompt: these options', else the mode's (:func:`~copyedit_lsp.decode.prompt.default_layout`)."""
        return self.layout or default_layout(self.mode)

    def check(self, modes: Sequence[str], examples: str) -> None:
        """Raise ValueError unless the mode is one of ``modes``, the splice and the example set
        ``examples`` (these options' or the decoder's choice) known, and a program given exactly
        in forced mode."""
        if self.mode not in modes or self.splice not in SPLICES or examples not in EXAMPLE_SETS:
            raise ValueError(
                f"mode must be one of {tuple(modes)}, splice one of {SPLICES}, examples one of {tuple(EXAMPLE_SETS)}"
            )
        if (self.mode == "forced") != (self.program is not None):
            raise ValueError("forced mode, and only forced mode, takes a program")
        if self.max_new_tokens < 1:
            raise ValueError("max_new_tokens must be positive")
        if not 0 <= self.copy_check < 1:
            raise ValueError("copy_check must be in [0, 1)")
        if self.layout is not None:
            self.layout.check()

    def budget(self, source_tokens: float) -> int:
        """The tokens the model may write for a text of ``source_tokens``: twice the text and room
        for a new definition or two (a script is as long as it is)."""
        if self.program is not None:
            return self.max_new_tokens
        return min(self.max_new_tokens, int(2 * source_tokens) + 512)


StopFlag = Callable[[], bool]


@dataclass(frozen=True)
class EditProgress:
    """A running edit as reported: its figures so far and the ops of its program that have closed
    (none in the rewrite modes)."""

    stats: EditStats
    ops: tuple[Op, ...] = ()


ProgressCallback = Callable[[EditProgress], None]


class Editor(Protocol):
    """What edits text: the local decoder and the remote one."""

    @property
    def device(self) -> str:
        """Which model runs the edits, and where (said when it loads)."""
        ...

    def warm(self, options: EditOptions) -> None:
        """Have the model's cache hold the fixed prompt prefix of edits with ``options`` (the
        system prompt and examples) and nothing of an earlier edit after it."""
        ...

    def edit(
        self,
        source: str,
        instruction: str,
        options: EditOptions = ...,
        *,
        stop: StopFlag | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> EditResult:
        """Edit ``source`` by ``instruction``; raises :class:`DecodeError` (:class:`Cancelled` once
        ``stop()`` is true) or ValueError for options it cannot run."""
        ...

    def apply(
        self,
        source: str,
        change: Change,
        options: EditOptions = ...,
        *,
        instruction: str = "",
        plan: Program | None = None,
        stop: StopFlag | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> EditResult:
        """Merge ``change`` into ``source`` by an apply program (or a rewrite given the change);
        ``plan``, the deterministic merge's program, may draft it (:mod:`~copyedit_lsp.decode.fast_apply`
        checks the result)."""
        ...

    def choose(self, source: str, instruction: str, language: str, names: Sequence[str]) -> str | None:
        """The one of ``names`` (definitions of ``source``) the instruction is about, as the base
        model says when it may say only one of them or the whole file (None)."""
        ...

    def rank(
        self, source: str, change: Change, texts: Sequence[str], options: EditOptions = ..., instruction: str = ""
    ) -> list[float]:
        """A score for each of ``texts``, placements of ``change`` into ``source`` that the code's
        structure leaves to choose between: the model's log-likelihood of writing it given the
        change (higher is likelier); raises :class:`DecodeError` where the backend cannot score."""
        ...

    def close(self) -> None:
        """Free the model or the connection."""
        ...


def same_code(text: str, other: str) -> bool:
    """Whether two texts differ at most in whitespace at the ends of lines and of the text."""
    return [line.rstrip() for line in text.strip().splitlines()] == [
        line.rstrip() for line in other.strip().splitlines()
    ]


def applied_otherwise(
    editor: Editor,
    source: str,
    change: Change,
    options: EditOptions,
    *,
    rewrite: str,
    selector: bool,
    instruction: str = "",
    plan: Program | None = None,
    stop: StopFlag | None = None,
    on_progress: ProgressCallback | None = None,
) -> EditResult | None:
    """An apply's result where another apply by ``editor`` gives it, else None (the editor decodes
    it): a file without a final line break merged ended, the result ending as the file does
    (:func:`~copyedit_lsp.core.change.ending_as`); program mode without an apply ``selector`` merged in
    the ``rewrite`` mode (``stats.fallback``), unless ``options.fallback`` is off."""
    if (ended := ended_text(source)) != source:
        result = editor.apply(ended, change, options, instruction=instruction, plan=plan, stop=stop,
                              on_progress=on_progress)  # fmt: skip
        return replace(result, text=ending_as(source, result.text))
    if not selector and options.mode == "program" and options.fallback:
        rewritten = editor.apply(source, change, replace(options, mode=rewrite), instruction=instruction,
                                 stop=stop, on_progress=on_progress)  # fmt: skip
        return replace(rewritten, stats=replace(rewritten.stats, fallback="selector"))
    return None


def fall_back(
    editor: Editor,
    result: EditResult,
    source: str,
    instruction: str,
    options: EditOptions,
    *,
    mode: str,
    stop: StopFlag | None = None,
    on_progress: ProgressCallback | None = None,
) -> EditResult:
    """``result`` :func:`checked`, or where program mode's ``result`` must give way
    (``options.fallback``: its output was cut short, its text parses worse than ``source``, loses
    code, is ``source`` unchanged or is not what the instruction asks (:func:`~copyedit_lsp.core.asked.mismatch`),
    by :data:`FALLBACKS`) the edit decoded again by ``editor`` in ``mode``, the editor's rewrite with
    the base model, checked; the returned result's stats add up both attempts and say why
    (``stats.fallback``)."""
    result = checked(result, source, instruction, options.language)
    if not options.fallback or options.mode != "program":
        return result
    if result.cut is not None:
        reason = "cut"
    elif adds_syntax_errors(source, result.text, options.language):
        reason = "syntax"
    elif result.loss is not None:
        reason = "loss"
    elif same_code(result.text, source):
        reason = "unchanged"
    elif result.mismatch:
        reason = "mismatch"
    else:
        return result
    started = time.perf_counter()
    again = replace(options, mode=mode, examples=None, fallback=False)
    editor.warm(again)
    rewrite = editor.edit(source, instruction, again, stop=stop, on_progress=on_progress)
    stats = replace(result.stats.plus(rewrite.stats), fallback=reason)
    stats.total_seconds = result.stats.total_seconds + time.perf_counter() - started
    fallen = EditResult(None, rewrite.text, stats, rewrite.tokens, rewrite.cut, replaced=result.program)
    return checked(fallen, source, instruction, options.language)


def checked(result: EditResult, source: str, instruction: str, language: str) -> EditResult:
    """``result`` with what its text loses of ``source`` (:func:`~copyedit_lsp.core.loss.lost_code`) and
    why it is not what ``instruction`` asks (:func:`~copyedit_lsp.core.asked.mismatch`),
    where it was not cut short."""
    if result.cut is not None:
        return result
    loss = lost_code(source, result.text, language, instruction)
    unlike = mismatch(source, result.text, language, instruction)
    return result if (loss, unlike) == (result.loss, result.mismatch) else replace(result, loss=loss, mismatch=unlike)


T = TypeVar("T")

# Two edits whose prompts share exactly the fixed prefix of their options.
PROBES = (("a = 1\n", "Probe one."), ("def b():\n    return 2\n", "Another probe, longer."))


def fixed_prefix(prompt: Callable[[str, str], Sequence[T]]) -> Sequence[T]:
    """What ``prompt(source, instruction)`` (text or tokens) writes the same for every edit."""
    first, second = (prompt(source, instruction) for source, instruction in PROBES)
    return first[: next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)]


class EditWatch:
    """One edit's stop flag and progress reports (after each op, and at least every
    :data:`PROGRESS_INTERVAL` seconds)."""

    def __init__(self, stats: EditStats, stop: StopFlag | None, on_progress: ProgressCallback | None):
        self.stats = stats
        self.stop = stop
        self.on_progress = on_progress
        self.reported = time.perf_counter()
        self.ops: tuple[Op, ...] = ()

    def check_stop(self) -> None:
        if self.stop is not None and self.stop():
            raise Cancelled("the edit was cancelled")

    def report(self, ops: Sequence[Op] | None = None) -> None:
        """Report the figures, and the program's ops so far where ``ops`` says (after an op closes)."""
        self.reported = time.perf_counter()
        if ops is not None:
            self.ops = tuple(ops)
        if self.on_progress is not None:
            self.on_progress(EditProgress(self.stats, self.ops))

    def tick(self) -> None:
        """Report if the last report is older than :data:`PROGRESS_INTERVAL`."""
        if time.perf_counter() - self.reported > PROGRESS_INTERVAL:
            self.report()


def fence_at(code: bytes) -> int:
    """Where a rewrite's code block closes (a line that starts with three backticks), or -1."""
    return (b"\n" + code).find(b"\n```")


def answer_code(answer: bytes, fenced: bool) -> tuple[bytes, bool]:
    """A rewrite's code in its ``answer`` so far, and whether its block has closed: where the answer
    opened inside the block (``fenced``: the fence was the answer's prefix) the answer up to the
    closing fence, else what follows the answer's first fence line up to the next one (an answer
    with no fence: all of it)."""
    if not fenced:
        opening = fence_at(answer)
        if opening >= 0:
            line_end = answer.find(b"\n", opening)
            answer = answer[line_end + 1 :] if line_end >= 0 else b""
            fenced = True
    closing = fence_at(answer) if fenced else -1
    return (answer[:closing], True) if closing >= 0 else (answer, False)


def rewritten_text(code: str, source: str) -> str:
    """A rewrite's code block as the edited text: the source's line breaks, and no final line
    break where the source has none."""
    if not source.endswith(("\n", "\r")) and code.endswith("\n"):
        code = code[:-1]
    return with_newline(code, newline_of(source))


def newline_of(source: str) -> str:
    """The document's line break: ``\\r\\n`` if most of its lines use it, else ``\\n``."""
    crlf = source.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= source.count("\n") else "\n"


def with_newline(text: str, newline: str) -> str:
    """``text`` with its ``\\n`` line breaks written as ``newline``."""
    return text.replace("\n", newline) if newline != "\n" else text


def repeats_input(view: SourceView, body: str, line: int) -> bool:
    """Whether a gen body of whole lines ``body`` (as the model writes it), written where input line
    ``line`` comes next, only repeats the input lines from there and stops short of the last one.

    Such a gen changes nothing: a copy says the same.  Neither decoder lets it end (its ``</gen>``
    and the end of the turn are masked where a line starts), so the model writes on until its gen
    changes a line or reaches the input's end.  The shortest program never holds one, so a trained
    selector that opens a gen a line or two before the line it means to change goes on to change it."""
    lines = body.splitlines(keepends=True)
    end = line - 1 + len(lines)
    return end < len(view.lines) and all(map(same_line, lines, view.lines[line - 1 : end]))


def same_line(line: str, other: str) -> bool:
    """Equal lines; any two lines of whitespace count as the same blank line."""
    return line == other or not (line.strip() or other.strip())


def resembles(line: str, other: str) -> bool:
    """Whether two lines read alike enough that one stands for the other rewritten."""
    return difflib.SequenceMatcher(None, line.strip(), other.strip()).ratio() >= 0.6
