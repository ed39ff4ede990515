"""What the commands share: the edit sets they read, the model and remote arguments, the
settings and editor those name, the server's options, a run's manifest, a text read as UTF-8."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def add_source_arguments(parser: argparse.ArgumentParser, default: Sequence[str] | None = None) -> None:
    """The edit sets to read (``default`` without any: every preset) and how to read a JSONL path."""
    from ..common.datasets import FIELDS, FORMATS, PRESETS, WHOLE_FILES

    parser.add_argument(
        "sources",
        nargs="*",
        metavar="SOURCE",
        default=list(default or PRESETS),
        help=f"a preset ({', '.join([*PRESETS, *WHOLE_FILES])}) or a JSONL path; "
        f"default: {', '.join(default) if default else 'every preset'}",
    )
    parser.add_argument(
        "--format",
        choices=list(FORMATS),
        default="plain",
        help="field names of a JSONL path: plain (before/after/instruction/test/context), canitedit "
        "(before/after/instruction_descriptive/tests), canitedit-lazy (the same with instruction_lazy), editeval "
        "(input/output/instruction/test/context; a context with {{Code}} takes the edited text there)",
    )
    for name in FIELDS:
        example = " (e.g. instruction_lazy for CanItEdit's lazy instructions)" if name == "instruction" else ""
        parser.add_argument(
            f"--{name}-field",
            help=f"JSONL field of the item's {name}, overriding --format{example}; 'a+b' joins two fields",
        )
    parser.add_argument("--language", default="python", help="language of the items of a JSONL path")
    parser.add_argument("--limit", type=int, help="read at most this many items per source")
    parser.add_argument(
        "--split",
        choices=["dev", "report"],
        help="one split of each set: dev, every 5th item from the first (where prompt designs are "
        "chosen), or report, the rest",
    )


def load_sources(args: argparse.Namespace, seed: int | None = None) -> dict[str, list]:
    from ..common.datasets import FIELDS, load_items

    fields = {name: value for name in FIELDS if (value := vars(args)[f"{name}_field"]) is not None}
    return {
        source: load_items(
            source,
            format=args.format,
            fields=fields,
            language=args.language,
            limit=args.limit,
            seed=seed,
            split=args.split,
        )
        for source in args.sources
    }


# The remote arguments' names (None where a command takes none).
REMOTE = ("remote_url", "remote_model", "remote_engine", "remote_timeout", "remote_gens_per_request")


class _Renamed(argparse.Action):
    """``--adapter``, ``--selector``'s old name: taken, with a word on stderr."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print("copyedit: --adapter is now --selector (the old name works for now)", file=sys.stderr)
        namespace.selector = values


def add_model_arguments(parser: argparse.ArgumentParser, *, remote: str | None = None) -> None:
    """The model's arguments; ``remote``: none (None), the remote server's (``server``), or those
    and ``--backend`` (``backend``)."""
    from ..decode.edit import DEFAULT_MODEL

    parser.add_argument("--model", default=DEFAULT_MODEL, help="a model name (copyedit model list) or a GGUF path")
    parser.add_argument("--n-ctx", type=int, default=0, help="context length in tokens (default 0: sized to each edit)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    parser.add_argument("--gpu-layers", type=int, default=0, help="layers to offload to a GPU")
    parser.add_argument(
        "--selector",
        default="default",
        help="program modes' span selector: default (the one shipped for the model), none, "
        "a shipped name or a LoRA adapter .gguf",
    )
    parser.add_argument("--adapter", action=_Renamed, help=argparse.SUPPRESS)
    parser.add_argument(
        "--apply-selector", default="default", help="apply programs' selector: default, a shipped name or a .gguf"
    )
    parser.add_argument(
        "--batch-invariant",
        action="store_true",
        help="the same logits however tokens are batched: drafted and undrafted decoding agree "
        "token for token (slower; needs llama.cpp built without llamafile: make exact)",
    )
    if remote is None:
        parser.set_defaults(backend="local", **dict.fromkeys(REMOTE))
        return
    _add_remote_arguments(parser, backend=remote == "backend")


def _add_remote_arguments(parser: argparse.ArgumentParser, *, backend: bool) -> None:
    from ..decode.completions import API_KEY_VARIABLE
    from ..serve.config import CHOICES

    if backend:
        parser.add_argument(
            "--backend",
            choices=CHOICES["backend"],
            default="local",
            help=f"local: the model in this process; remote: an OpenAI-compatible completions "
            f"server (API key from ${API_KEY_VARIABLE})",
        )
    else:
        parser.set_defaults(backend="local")
    parser.add_argument("--remote-url", default="http://127.0.0.1:8080/v1", help="the server's base URL")
    parser.add_argument("--remote-model", default="", help="the served model's name (default: the first listed)")
    parser.add_argument(
        "--remote-engine",
        choices=CHOICES["remote_engine"],
        default="llama.cpp",
        help="how the grammar is sent: llama.cpp (llama-server, llama-cpp-python) or vllm",
    )
    parser.add_argument("--remote-timeout", type=float, default=60.0, help="seconds the server may stay silent")
    parser.add_argument(
        "--remote-one-op",
        dest="remote_gens_per_request",
        action="store_false",
        help="one op per program request (default: a request runs through gens to the next copy)",
    )


def settings(args: argparse.Namespace, **values):
    """The settings the model and remote arguments name (checked: ValueError on a bad value)."""
    from ..serve.config import Settings

    given = {name: value for name in REMOTE if (value := vars(args)[name]) is not None}
    model = {"model": args.model, "selector": args.selector, "apply_selector": args.apply_selector}
    values = {"backend": args.backend} | given | model | values
    return Settings(
        n_ctx=args.n_ctx,
        n_threads=args.threads,
        n_gpu_layers=args.gpu_layers,
        batch_invariant=args.batch_invariant,
        **values,
    ).check()


def open_editor(args: argparse.Namespace, **values):
    """The editor the arguments name, saying on stderr which model runs and where."""
    from ..serve.worker import open_editor

    editor = open_editor(settings(args, **values), progress=True)
    print(f"copyedit: {editor.device}", file=sys.stderr)
    return editor


def open_runner(args: argparse.Namespace, runner: str):
    """The editor a benchmark mode runs on (:func:`~copyedit_lsp.bench.apply.runner_of`): the model
    the arguments name, the remote server, or another model with its shipped selectors."""
    if runner in ("local", "remote"):
        return open_editor(args, backend=runner)
    return open_editor(args, model=runner, selector="default", apply_selector="default")


def read_text(path: str, what: str) -> str | None:
    """The UTF-8 text of ``path`` (``-``: stdin), or None after saying why not."""
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        print(
            f"copyedit: the {what} {path} cannot be read as UTF-8 text ({error}); nothing was changed", file=sys.stderr
        )
        return None


def server_options(args: argparse.Namespace) -> dict:
    """The server's initializationOptions from the model (and remote) arguments."""
    options = {"model": args.model, "nCtx": args.n_ctx, "nGpuLayers": args.gpu_layers, "selector": args.selector,
               "applySelector": args.apply_selector}  # fmt: skip
    if args.backend == "remote":
        options |= {
            "backend": "remote",
            "remoteUrl": args.remote_url,
            "remoteModel": args.remote_model,
            "remoteEngine": args.remote_engine,
            "remoteTimeout": args.remote_timeout,
            "remoteGensPerRequest": args.remote_gens_per_request,
        }
    if args.batch_invariant:
        options["batchInvariant"] = True
    return options | ({"nThreads": args.threads} if args.threads else {})


def write_manifest(
    out: str,
    name: str,
    *,
    model: str,
    selector: str | None = None,
    threads: int | None = None,
    backend: str = "local",
    task: str = "edit",
) -> None:
    """The run's manifest beside its outputs in ``out`` (``bench.manifest``); ``selector``: the span
    selector setting the run loads for ``task`` (edit or apply), None where it loads none."""
    from ..bench.manifest import run_manifest, write_manifest

    manifest = run_manifest(model=model, selector=selector, threads=threads, backend=backend, task=task)
    write_manifest(manifest, Path(out), name)
