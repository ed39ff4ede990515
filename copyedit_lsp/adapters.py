"""Trained span selectors: LoRA adapters (llama.cpp GGUF) that teach a base model to write programs.

The shipped adapters lie in the repository's ``adapters/`` (inside the installed package as
``copyedit_lsp/adapters``), each with its sha256, checked before it is used, and the prompt's
few-shot set it was trained with.  ``copyedit train`` rebuilds them (docs/training.md: the recipes).
The ``adapter`` setting: ``default`` (the shipped adapter of the model, if there is one), ``none``,
a shipped adapter's name, or a path to an adapter GGUF.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .models import ModelError, sha256_file


@dataclass(frozen=True)
class Selector:
    """A LoRA adapter for one base model and the example set of the prompt it was trained with."""

    name: str
    path: Path
    model: str | None = None  # the base model's name (None: a user's adapter, any model)
    examples: str = "none"
    sha256: str | None = None


@dataclass(frozen=True)
class ShippedAdapter:
    model: str
    file: str
    sha256: str
    examples: str = "none"


SHIPPED: dict[str, ShippedAdapter] = {
    # The default (the first entry of a model is): v4, four stages from v2 (the earlier ones are in
    # docs/history.md with the commits that hold them)
    "qwen2.5-coder-0.5b-v4": ShippedAdapter(
        "qwen2.5-coder-0.5b",
        "qwen2.5-coder-0.5b-v4.gguf",
        "6e897c24fa300d618b1d96d0a0f3bf147b538e3a246ec030ad9a2fff24d4dc4b",
        "none",
    ),
    # the 1.5B model's default: one stage with intent instructions and its own distilled fixes
    "qwen2.5-coder-1.5b": ShippedAdapter(
        "qwen2.5-coder-1.5b",
        "qwen2.5-coder-1.5b.gguf",
        "9e8e30aa9977dacc9a4786812ebc40f828da39c144fb286eac562d7ba864fb8c",
        "none",
    ),
}


def adapters_dir() -> Path:
    """The shipped adapters: inside the installed package, else the repository's ``adapters/``."""
    here = Path(__file__).resolve().parent
    inside = here / "adapters"
    return inside if inside.is_dir() else here.parent / "adapters"


@cache
def _verified(path: Path, sha256: str) -> bool:
    return sha256_file(path) == sha256


def resolve_selector(setting: str, model: str) -> Selector | None:
    """The selector the ``adapter`` setting names for ``model`` (a model name), or None.

    Raises ModelError for an unknown name, a missing file, a shipped adapter whose sha256 does
    not match, or a shipped adapter of another base model."""
    if setting == "none":
        return None
    if setting == "default":
        name = next((n for n, a in SHIPPED.items() if a.model == model), None)
        if name is None:
            return None
        setting = name
    if setting in SHIPPED:
        shipped = SHIPPED[setting]
        if shipped.model != model:
            raise ModelError(f"the adapter {setting} is for {shipped.model}, not {model}")
        path = adapters_dir() / shipped.file
        if not path.is_file():
            raise ModelError(f"the shipped adapter {setting} is missing: {path}")
        if not _verified(path, shipped.sha256):
            raise ModelError(f"the shipped adapter {path} does not match its sha256 (corrupt or replaced)")
        return Selector(setting, path, shipped.model, shipped.examples, shipped.sha256)
    path = Path(setting).expanduser()
    if path.suffix != ".gguf" or not path.is_file():
        known = ", ".join(["default", "none", *SHIPPED])
        raise ModelError(f"no adapter {setting!r}: give one of {known}, or the path of a LoRA adapter .gguf")
    return Selector(path.stem, path.resolve())
