"""Server settings: ``initializationOptions`` and ``workspace/didChangeConfiguration``, via cattrs."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any

import cattrs

from .edit import COPY_CHECK, EditOptions
from .models import DEFAULT_MODEL

REVIEWS = ("always", "workspace", "never")


@dataclass(frozen=True)
class Settings:
    """What a user can configure; keys may be snake_case or camelCase."""

    backend: str = "local"  # "local" (llama.cpp in the server) or "remote" (a completions server)
    model: str = DEFAULT_MODEL  # a model name or a GGUF path
    n_ctx: int = 0  # the context in tokens; 0: sized to each edit, up to the model's training context
    n_threads: int | None = None  # default: every core
    n_gpu_layers: int = 0
    batch_invariant: bool = False  # the same logits however tokens are batched (a build without llamafile)
    adapter: str = "default"  # the program modes' span selector: default, none, a shipped name or a .gguf path
    mode: str = "program"  # "program", "rewrite" or "lookup"
    splice: str = "prefill"  # "prefill" or "none"
    copy_check: float = COPY_CHECK  # program mode: the model checks its copies (EditOptions.copy_check); 0: off
    fallback: bool = True  # program mode: a broken program gives way to a rewrite (EditOptions.fallback)
    max_new_tokens: int = 2048
    syntax_guard: bool = True  # refuse a result with more syntax errors than the original
    review: str = "always"  # hunks the user confirms: "always", "workspace" (the refactor only) or "never"
    max_file_bytes: int = 2_000_000  # larger documents get an error, not an edit
    remote_url: str = "http://127.0.0.1:8080/v1"  # an OpenAI-compatible server's base URL
    remote_model: str = ""  # the served model's name; empty: the first the server lists
    remote_engine: str = "llama.cpp"  # "llama.cpp" (llama-server, llama-cpp-python) or "vllm"
    remote_timeout: float = 60.0  # seconds the server may stay silent
    remote_gens_per_request: bool = True  # a request runs through gens to the next copy; False: one op each

    def check(self) -> Settings:
        """Raise ValueError on a value out of range."""
        if self.mode not in ("program", "rewrite", "lookup"):
            raise ValueError(f"mode must be 'program', 'rewrite' or 'lookup', not {self.mode!r}")
        if self.review not in REVIEWS:
            raise ValueError(f"review must be one of {', '.join(map(repr, REVIEWS))}, not {self.review!r}")
        if self.splice not in ("prefill", "none"):
            raise ValueError(f"splice must be 'prefill' or 'none', not {self.splice!r}")
        for name in ("max_new_tokens", "max_file_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive")
        if self.n_ctx < 0:
            raise ValueError("n_ctx must be 0 (sized to each edit) or a number of tokens")
        if not 0 <= self.copy_check < 1:
            raise ValueError(f"copy_check must be in [0, 1), not {self.copy_check!r}")
        if self.n_threads is not None and self.n_threads < 1:
            raise ValueError("n_threads must be positive")
        if self.backend not in ("local", "remote"):
            raise ValueError(f"backend must be 'local' or 'remote', not {self.backend!r}")
        if self.backend == "remote":
            self.endpoint()  # checks the URL and engine
            if self.mode == "lookup":
                raise ValueError("lookup mode needs the local backend (a server drafts on its own)")
        if self.remote_timeout <= 0:
            raise ValueError("remote_timeout must be positive")
        return self

    def endpoint(self):
        """The remote server these settings name (:class:`copyedit_lsp.remote.Endpoint`)."""
        from .remote import Endpoint

        return Endpoint(
            self.remote_url,
            self.remote_model,
            self.remote_engine,
            self.remote_timeout,
            gens_per_request=self.remote_gens_per_request,
        )

    def edit_options(self, language: str) -> EditOptions:
        """The options of an edit in ``language``."""
        return EditOptions(
            mode=self.mode,
            splice=self.splice,
            language=language,
            max_new_tokens=self.max_new_tokens,
            copy_check=self.copy_check,
            fallback=self.fallback,
        )

    def reviews(self, workspace: bool) -> bool:
        """Whether the hunks of an edit (of the workspace refactor, with ``workspace``) need the
        user's confirmation."""
        return self.review == "always" or (workspace and self.review == "workspace")

    @property
    def model_keys(self) -> tuple:
        """The settings that need the model reloaded when they change."""
        if self.backend == "remote":
            return (self.backend, self.endpoint())
        return (
            self.backend,
            self.model,
            self.n_ctx,
            self.n_threads,
            self.n_gpu_layers,
            self.batch_invariant,
            self.adapter,
        )


_converter = cattrs.Converter(forbid_extra_keys=False)


def _strict_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, not {value!r}")
    return value


_converter.register_structure_hook(bool, _strict_bool)
_NAMES = {f.name for f in fields(Settings)}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def updated(settings: Settings, options: Any) -> Settings:
    """``settings`` with the values in ``options`` (a dict, maybe under a ``copyedit`` key).

    Raises ValueError with a clear message on a wrong type or value; unknown keys are ignored.
    """
    if options is None:
        return settings
    if not isinstance(options, dict):
        raise ValueError(f"settings must be an object, not {type(options).__name__}")
    if isinstance(options.get("copyedit"), dict):
        options = options["copyedit"]
    values = {_snake(k): v for k, v in options.items() if _snake(k) in _NAMES}
    merged = {f.name: getattr(settings, f.name) for f in fields(Settings)} | values
    try:
        return _converter.structure(merged, Settings).check()
    except (cattrs.BaseValidationError, TypeError) as error:
        details = (
            "; ".join(cattrs.transform_error(error)) if isinstance(error, cattrs.BaseValidationError) else str(error)
        )
        raise ValueError(f"invalid copyedit settings: {details}") from None
