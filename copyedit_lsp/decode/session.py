"""The loaded model's session: what lasts from one edit to the next, apart from the decode loop.

One llama.cpp model (:class:`~copyedit_lsp.decode.llama_model.LlamaModel`), the span selectors and
the adapter each mode runs with, the chat template, the program's token pieces, the prompt
prefixes warmed in the KV cache, the vocabulary's masks, and whether an edit fits the context.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from ..core.program import GEN_CLOSE
from .edit import ContextOverflow, EditOptions, fixed_prefix
from .llama_model import LlamaModel, Snapshot
from .prompt import ChatTemplate
from .selector import Selector
from .tokens import OpeningMask, ProgramTokens, TokenRun


class ModelSession:
    """One loaded model and its state between edits; the decoders' loops run on it."""

    def __init__(self, llama: LlamaModel, *, selector: Selector | None = None, apply_selector: Selector | None = None):
        self.llama = llama
        self.selector = selector  # the trained span selector of the program modes, if any
        self.apply_selector = apply_selector  # the one of apply programs, if any
        self.template = ChatTemplate(llama.metadata)
        self.tokens = ProgramTokens.of(llama.tokenize)
        self.prefixes: dict[tuple, tuple[list[int], Snapshot]] = {}  # warmed prompt prefixes

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
    ) -> ModelSession:
        """Load a model by name (fetched from PyPI when missing) or GGUF path (``batch_invariant``:
        see :class:`~copyedit_lsp.decode.llama_model.LlamaModel`) and the span selectors the ``selector``
        and ``apply_selector`` settings name (:func:`~copyedit_lsp.decode.selector.resolve_selector`)."""
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
        """Where the model runs (:attr:`~copyedit_lsp.decode.llama_model.LlamaModel.device`)."""
        return f"{self.llama.path.name} on {self.llama.device}"

    def close(self) -> None:
        """Free the model."""
        self.llama.close()

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
        (:class:`~copyedit_lsp.decode.edit.Editor`): evaluated once, then restored from a snapshot."""
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
        if key not in self.prefixes:
            fixed = list(fixed_prefix(lambda source, instruction: self.prompt(source, instruction, options)))
            self.llama.prefill(fixed)
            self.prefixes[key] = (fixed, self.llama.snapshot())
        fixed, snapshot = self.prefixes[key]
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
        options name none, else :attr:`~copyedit_lsp.decode.edit.EditOptions.prompt_examples`."""
        if options.examples is None and self.selector is not None and self.adapter_for(options.mode) is not None:
            return self.selector.examples
        return options.prompt_examples

    def prepare(self, mode: str, task: str = "edit") -> None:
        """Set the model's adapter for ``mode`` and ``task`` (:meth:`adapter_for`; a change empties
        the KV cache)."""
        self.llama.use_adapter(self.adapter_for(mode, task))

    def make_room(self, tokens: int) -> None:
        """A context of at least ``tokens`` where it can grow (the warmed prefixes, saved with the
        context the model was reloaded without, are dropped)."""
        if self.llama.make_room(tokens):
            self.prefixes.clear()

    def fit(self, run: TokenRun, prompt: list[int], source_tokens: int, options: EditOptions) -> None:
        """Fail before decoding when the prompt and text cannot fit; set the edit's token budget."""
        run.budget = options.budget(source_tokens)
        need = len(prompt) + source_tokens + 64
        self.make_room(need + run.budget)
        if need > self.llama.n_ctx:
            raise ContextOverflow(
                f"the prompt ({len(prompt)} tokens) and the text to edit ({source_tokens} tokens) "
                f"do not fit the model's context of {self.llama.n_ctx} tokens: "
                + ("edit a smaller range" if self.llama.growable else "edit a smaller range or raise n_ctx")
            )

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
