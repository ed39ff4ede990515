"""Server settings: ``initializationOptions`` and ``workspace/didChangeConfiguration``, via cattrs."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import cattrs

from ..decode.edit import COPY_CHECK, DEFAULT_MODEL, REMOTE_ENGINES, EditOptions


def setting(
    default: Any,
    doc: str,
    *,
    detail: str = "",
    vscode: str = "",
    choices: dict[str, str] | None = None,
    schema: dict[str, Any] | None = None,
    was: str = "",
) -> Any:
    """A field of :class:`Settings` with what its generated descriptions say (``copyedit settings
    write``): ``doc``, one line for the READMEs' tables; ``detail``, VS Code's description (else
    ``doc``); ``vscode``, its key under ``copyedit.`` (else the camelCase name); ``choices``, the
    allowed values with what each does; ``schema``, JSON Schema's ``minimum``, ``pattern`` and the like;
    ``was``, the field's old name, still taken with a warning (:func:`updated`)."""
    meta = {
        "doc": doc,
        "detail": detail or f"{doc[0].upper()}{doc[1:]}.",
        "vscode": vscode,
        "choices": choices or {},
        "schema": schema or {},
        "was": was,
    }
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Settings:
    """What a user can configure; keys may be snake_case or camelCase."""

    model: str = setting(
        DEFAULT_MODEL,
        "a model name (`copyedit model list`) or a GGUF path",
        detail="A model name known to `copyedit model list` (e.g. `qwen2.5-coder-0.5b`, `qwen2.5-coder-1.5b`) "
        "or the path of a GGUF file.",
    )
    mode: str = setting(
        "program",
        "how the model writes an edit",
        choices={
            "program": "The model writes an edit program of copies and new lines (Copy-as-Decode).",
            "rewrite": "The model rewrites the whole scope token by token (the baseline).",
            "lookup": "The model rewrites the whole scope, drafts from the original verified in batches "
            "(prompt lookup).",
        },
    )
    selector: str = setting(
        "default",
        "program mode's selector: `default`, a shipped name, `none`, a `.gguf`",
        detail="The span selector of program mode: what teaches the model to write edit programs, a LoRA "
        "adapter. `default`: the one shipped for the model; `none`: the base model; or the path of a LoRA "
        "adapter `.gguf` (`copyedit train`).",
        was="adapter",
    )
    apply_selector: str = setting(
        "default",
        "apply programs' selector: `default`, a shipped name, a `.gguf`",
        detail="The span selector that merges a change an assistant wrote (`copyedit.apply`): `default`, the "
        "one shipped for the model; a shipped name; or the path of a LoRA adapter `.gguf` (`copyedit train "
        "--apply-share`).",
    )
    splice: str = setting(
        "prefill",
        "how copied lines are evaluated in program mode",
        choices={
            "prefill": "Copied lines enter the model's cache in one batched forward pass.",
            "none": "Copied lines are decoded one token at a time.",
        },
    )
    copy_check: float = setting(
        COPY_CHECK,
        "program mode: a copied token less likely than this ends the copy; 0: off",
        detail="Program mode: the model checks each copy as its lines are evaluated. A copied token less "
        "probable than this under the model (and not its first choice) ends the copy before its line, and "
        "the model rewrites that line. 0 turns the check off.",
        schema={"minimum": 0, "exclusiveMaximum": 1},
    )
    fallback: bool = setting(
        True,
        "program mode: a broken, lossy or empty program gives way to a rewrite",
        detail="Program mode: where the model's program is cut short, parses worse than the original, loses "
        "code or changes nothing, decode the edit again as a rewrite by the base model (slower, but an edit "
        "you can apply). Applying a change without an apply selector (the remote backend has none) is then a "
        "rewrite given the change from the start; off, the base model writes the apply program.",
    )
    review: str = setting(
        "always",
        "hunks the user confirms before they apply",
        choices={
            "always": "Every edit opens a diff of the proposal to accept, reject or take hunk by hunk.",
            "workspace": "Only the workspace refactor asks first (VS Code's refactor preview); single edits "
            "apply at once.",
            "never": "Edits apply at once; undo takes them back.",
        },
    )
    syntax_guard: bool = setting(True, "refuse an edit whose result has more syntax errors than the original")
    n_ctx: int = setting(
        0,
        "the context in tokens; 0: sized to each edit",
        detail="The model's context size in tokens. 0 sizes it to each edit: it starts at 4096 and grows, as "
        "far as the model's training context, when an edit needs more.",
        schema={"minimum": 0},
    )
    n_threads: int | None = setting(
        None,
        "CPU threads for the model; unset: every core",
        detail="CPU threads for what runs on the CPU: every layer without a GPU, the layers `nGpuLayers` "
        "leaves on the CPU with one. With every layer on a GPU they matter little.",
        vscode="threads",
        schema={"minimum": 1},
    )
    n_gpu_layers: int = setting(
        0,
        "model layers offloaded to a GPU (-1: all, 0: none)",
        detail="Layers llama.cpp runs on a GPU, from the first; -1 (or more than the model has) puts every "
        "layer and the output layer there, with flash attention on. Needs llama.cpp built with CUDA "
        "(`make llama-cuda`, docs/gpu.md); on a build without a GPU the model runs on the CPU and says so "
        "when it loads.",
        vscode="gpuLayers",
        schema={"minimum": -1},
    )
    batch_invariant: bool = setting(
        False,
        "logits independent of batching (needs `make exact`); slower",
        detail="Evaluate so that a token's logits do not depend on how tokens were batched: drafted and "
        "undrafted decoding then agree token for token. Slower; needs llama-cpp-python built without "
        "llamafile (`make exact`).",
    )
    max_new_tokens: int = setting(2048, "most tokens the model may choose in one edit", schema={"minimum": 1})
    max_file_bytes: int = setting(2_000_000, "larger documents get an error, not an edit", schema={"minimum": 1})
    backend: str = setting(
        "local",
        "where the model runs",
        choices={
            "local": "The model runs inside the server (llama.cpp on this machine).",
            "remote": "An OpenAI-compatible completions server decodes: llama-server, llama-cpp-python's "
            "server or vLLM (API key from the server's environment variable COPYEDIT_API_KEY).",
        },
    )
    remote_url: str = setting(
        "http://127.0.0.1:8080/v1",
        "the remote server's base URL",
        detail="The completions server's base URL (with `copyedit.backend` = `remote`), e.g. `http://gpu-box:8000/v1`.",
        vscode="remote.url",
        schema={"pattern": "^https?://"},
    )
    remote_model: str = setting("", "the served model's name; empty: the first the server lists", vscode="remote.model")
    remote_engine: str = setting(
        "llama.cpp",
        "the remote server's kind",
        vscode="remote.engine",
        choices=dict(
            zip(
                REMOTE_ENGINES,
                (
                    "llama-server or llama-cpp-python's server: the `grammar` field.",
                    "vLLM 0.10.2 or later: `structured_outputs.grammar`.",
                ),
                strict=True,
            )
        ),
    )
    remote_timeout: float = setting(
        60.0, "seconds the server may stay silent before an edit fails", vscode="remote.timeout",
        schema={"exclusiveMinimum": 0},
    )  # fmt: skip
    remote_gens_per_request: bool = setting(
        True,
        "a request runs through gens to the next copy; false: one op",
        detail="A program request runs through gens to the next copy, which ends it: the same programs as "
        "one request per op, in fewer requests.",
        vscode="remote.gensPerRequest",
    )

    def check(self) -> Settings:
        """Raise ValueError on a value out of range."""
        for name, choices in CHOICES.items():
            if getattr(self, name) not in choices:
                allowed = ", ".join(map(repr, choices))
                raise ValueError(f"{name} must be one of {allowed}, not {getattr(self, name)!r}")
        for name, schema in SCHEMAS.items():
            value = getattr(self, name)
            if value is not None and not all(TESTS[test](value, limit) for test, limit in schema.items()):
                said = " and ".join(f"{WORDS[test]} {limit}" for test, limit in schema.items())
                raise ValueError(f"{name} must be {said}, not {value!r}")
        if self.backend == "remote" and self.mode == "lookup":
            raise ValueError("lookup mode needs the local backend (a server drafts on its own)")
        return self

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
            return (
                self.backend,
                self.remote_url,
                self.remote_model,
                self.remote_engine,
                self.remote_timeout,
                self.remote_gens_per_request,
            )
        return (
            self.backend,
            self.model,
            self.n_ctx,
            self.n_threads,
            self.n_gpu_layers,
            self.batch_invariant,
            self.selector,
            self.apply_selector,
        )


TESTS = {
    "minimum": lambda value, limit: value >= limit,
    "exclusiveMinimum": lambda value, limit: value > limit,
    "exclusiveMaximum": lambda value, limit: value < limit,
    "pattern": lambda value, pattern: re.match(pattern, value) is not None,
}
WORDS = {"minimum": "at least", "exclusiveMinimum": "more than", "exclusiveMaximum": "less than", "pattern": "like"}
SCHEMAS = {f.name: f.metadata["schema"] for f in fields(Settings) if f.metadata["schema"]}
CHOICES = {f.name: tuple(f.metadata["choices"]) for f in fields(Settings) if f.metadata["choices"]}
_converter = cattrs.Converter(forbid_extra_keys=False)


def _strict_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, not {value!r}")
    return value


_converter.register_structure_hook(bool, _strict_bool)
_NAMES = {f.name for f in fields(Settings)}
RENAMED = {f.metadata["was"]: f.name for f in fields(Settings) if f.metadata["was"]}  # old name: new name


def camel(name: str) -> str:
    """A field's key in LSP settings: ``n_threads`` -> ``nThreads``."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def updated(settings: Settings, options: Any, on_renamed: Callable[[str], None] | None = None) -> Settings:
    """``settings`` with the values in ``options`` (a dict, maybe under a ``copyedit`` key).

    Raises ValueError with a clear message on a wrong type or value; unknown keys are ignored. A
    setting under its old name (:data:`RENAMED`) is taken, unless its new name is given too, and
    ``on_renamed`` gets a warning that names both."""
    if options is None:
        return settings
    if not isinstance(options, dict):
        raise ValueError(f"settings must be an object, not {type(options).__name__}")
    if isinstance(options.get("copyedit"), dict):
        options = options["copyedit"]
    values = {_snake(k): v for k, v in options.items() if _snake(k) in _NAMES}
    for key, value in options.items():
        if (new := RENAMED.get(_snake(key))) is not None:
            values.setdefault(new, value)
            if on_renamed is not None:
                on_renamed(f"the setting {key} is now {camel(new)}: rename it (the old name works for now)")
    merged = {f.name: getattr(settings, f.name) for f in fields(Settings)} | values
    try:
        return _converter.structure(merged, Settings).check()
    except (cattrs.BaseValidationError, TypeError) as error:
        details = (
            "; ".join(cattrs.transform_error(error)) if isinstance(error, cattrs.BaseValidationError) else str(error)
        )
        raise ValueError(f"invalid copyedit settings: {details}") from None
