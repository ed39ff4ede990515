"""Span selectors: what teaches a base model to write edit programs, each stored as a LoRA adapter
(a llama.cpp GGUF file) that :meth:`~copyedit_lsp.decode.llama_model.LlamaModel.use_adapter` sets.

The shipped selectors lie in the repository's ``selectors/`` (inside the installed package as
``copyedit_lsp/selectors``), each with its sha256, checked before it is used, and the prompt's
few-shot set it was trained with.  ``copyedit train`` rebuilds them (docs/training.md: the recipes).
The ``selector`` setting: ``default`` (the shipped selector of the model, if there is one), ``none``,
a shipped selector's name, or the path of a LoRA adapter GGUF.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .models import ModelError, sha256_file


@dataclass(frozen=True)
class Selector:
    """A span selector: its LoRA adapter file for one base model and the example set of the prompt
    it was trained with."""

    name: str
    path: Path
    model: str | None = None  # the base model's name (None: a user's selector, any model)
    examples: str = "none"
    sha256: str | None = None


@dataclass(frozen=True)
class ShippedSelector:
    model: str
    file: str
    sha256: str
    examples: str = "none"
    task: str = "edit"  # edit programs, or apply programs (a change merged: copyedit_lsp.decode.fast_apply)


SHIPPED: dict[str, ShippedSelector] = {
    # The default (the first entry of a model is): v4, four stages from v2 (the earlier ones are in
    # docs/history.md with the commits that hold them)
    "qwen2.5-coder-0.5b-v4": ShippedSelector(
        "qwen2.5-coder-0.5b",
        "qwen2.5-coder-0.5b-v4.gguf",
        "c0fe660101e5c25fd9e759d5583448eb59ce1c0e5907e44cc8692b995ffe48ed",
        "none",
    ),
    # the 0.5B's apply programs (applySelector): five stages from v4, its card has the chain
    "qwen2.5-coder-0.5b-apply": ShippedSelector(
        "qwen2.5-coder-0.5b",
        "qwen2.5-coder-0.5b-apply.gguf",
        "80f496f2a942a5881fb9120df6df0479d73520d0290659484a09bfc123323277",
        "none",
        task="apply",
    ),
    # the 1.5B model's default: one stage with intent instructions and its own distilled fixes
    "qwen2.5-coder-1.5b": ShippedSelector(
        "qwen2.5-coder-1.5b",
        "qwen2.5-coder-1.5b.gguf",
        "31424a1e797a157fb68df78d0cb8afcc0ac5a194d1e36217a3dae935f918ff35",
        "none",
    ),
}


def selectors_dir() -> Path:
    """The shipped selectors: inside the installed package, else the repository's ``selectors/``."""
    package = Path(__file__).resolve().parents[1]
    inside = package / "selectors"
    return inside if inside.is_dir() else package.parent / "selectors"


@cache
def _verified(path: Path, sha256: str) -> bool:
    return sha256_file(path) == sha256


def resolve_selector(setting: str, model: str, task: str = "edit") -> Selector | None:
    """The selector the ``selector`` setting (or for ``task`` apply, ``applySelector``) names for
    ``model`` (a model name), or None; ``default`` is the model's first shipped one of the task.

    Raises ModelError for an unknown name, a missing file, a shipped selector whose sha256 does
    not match, or a shipped selector of another base model."""
    if setting == "none":
        return None
    if setting == "default":
        name = next((n for n, a in SHIPPED.items() if a.model == model and a.task == task), None)
        if name is None:
            return None
        setting = name
    if setting in SHIPPED:
        shipped = SHIPPED[setting]
        if shipped.model != model:
            raise ModelError(f"the selector {setting} is for {shipped.model}, not {model}")
        path = selectors_dir() / shipped.file
        if not path.is_file():
            raise ModelError(f"the shipped selector {setting} is missing: {path}")
        if not _verified(path, shipped.sha256):
            raise ModelError(f"the shipped selector {path} does not match its sha256 (corrupt or replaced)")
        return Selector(setting, path, shipped.model, shipped.examples, shipped.sha256)
    path = Path(setting).expanduser()
    if path.suffix != ".gguf" or not path.is_file():
        known = ", ".join(["default", "none", *SHIPPED])
        raise ModelError(f"no selector {setting!r}: give one of {known}, or the path of a LoRA adapter .gguf")
    return Selector(path.stem, path.resolve())
