"""``copyedit bench ...`` and ``copyedit analyze``: the benchmarks and the analyses of the edit sets."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .arguments import (
    add_model_arguments,
    add_source_arguments,
    load_sources,
    open_editor,
    open_runner,
    server_options,
    write_manifest,
)

# One view of each edit set (the -docs views repeat their answers and tests).
EDIT_SETS = ["humanevalfix-python", "humanevalfix-js", "quixbugs"]


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def cmd_analyze(args: argparse.Namespace) -> int:
    """``copyedit analyze``: copy ceiling, oracle exact match and span noise, no model needed."""
    from ..bench import analysis
    from ..common.reports import markdown_table

    sets = load_sources(args)
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


def cmd_bench_paper_kernel(args: argparse.Namespace) -> int:
    """``copyedit bench paper-kernel``: the paper's kernel experiment on random Qwen2.5 shapes
    (``python -m copyedit_lsp.bench.paper_kernel`` where copyedit is not installed)."""
    from ..bench import paper_kernel

    return paper_kernel.run(args)


def cmd_bench_kernel(args: argparse.Namespace) -> int:
    """``copyedit bench kernel``: one batched eval vs one eval per token, after a long prefix."""

    from ..bench import kernel
    from ..decode.llama_model import LlamaModel
    from ..decode.models import resolve_model

    llama = LlamaModel(
        resolve_model(args.model, fetch_missing=True, progress=True),
        n_ctx=max(args.n_ctx, args.prefix + max(kernel.SPANS) + 64),
        n_threads=args.threads,
        n_gpu_layers=args.gpu_layers,
        batch_invariant=args.batch_invariant,
    )
    result = kernel.kernel_benchmark(llama, prefix_tokens=args.prefix, trials=args.trials)
    json_path, png_path = kernel.write_outputs(result, Path(args.out))
    write_manifest(args.out, "kernel", model=args.model, threads=args.threads, backend=args.backend)
    print(json.dumps(result, indent=2) if args.json else kernel.format_table(result))
    print(f"\nwrote {json_path} and {png_path}", file=sys.stderr)
    return 0


def cmd_bench_apply(args: argparse.Namespace) -> int:
    """``copyedit bench apply``: changes built from gold edits in every form, merged, scored."""

    from ..bench import apply

    sets = load_sources(args, seed=args.seed)
    modes = args.modes.split(",")
    runners = dict.fromkeys(runner for mode in modes if (runner := apply.runner_of(mode)[0]) is not None)
    editors = {runner: open_runner(args, runner) for runner in runners}
    result = apply.apply_benchmark(
        sets,
        forms=args.forms.split(","),
        modes=modes,
        editors=editors,
        fallback=args.fallback,
        seed=args.seed or 0,
        progress=not args.json,
    )
    result |= {"model": args.model if editors else None, "models": list(editors), "limit": args.limit}
    paths = apply.write_outputs(result, Path(args.out), args.name)
    backend = "+".join(kind for kind in ("local", "remote") if kind in editors)
    selector = args.apply_selector if "local" in editors else None
    write_manifest(args.out, args.name, model=args.model, selector=selector, threads=args.threads,
                   backend=backend or args.backend, task="apply")  # fmt: skip
    if args.json:
        print(json.dumps({name: data["summary"] for name, data in result["sets"].items()}, indent=2))
    else:
        print(apply.format_tables(result))
    print(f"wrote {', '.join(map(str, paths))}", file=sys.stderr)
    return 0


def cmd_bench_snippets(args: argparse.Namespace) -> int:
    """``copyedit bench snippets``: snippets in each style assistants write, merged by each mode."""

    from ..bench import apply, snippets

    languages, styles = tuple(args.languages.split(",")), tuple(args.styles.split(","))
    cases = snippets.build_cases(languages, styles, per_style=args.per_style, seed=args.seed, units=args.units)
    modes = args.modes.split(",")
    runners = dict.fromkeys(runner for mode in modes if (runner := apply.runner_of(mode)[0]) is not None)
    editors = {runner: open_runner(args, runner) for runner in runners}
    result = snippets.snippets_benchmark(cases, modes=modes, editors=editors)
    result |= {"model": args.model if editors else None, "per_style": args.per_style, "seed": args.seed,
               "units": args.units}  # fmt: skip
    paths = snippets.write_outputs(result, Path(args.out), args.name)
    selector = args.apply_selector if editors else None
    write_manifest(args.out, args.name, model=args.model, selector=selector, threads=args.threads, task="apply")
    print(snippets.format_tables(result))
    print(f"wrote {', '.join(map(str, paths))}", file=sys.stderr)
    return 0


def cmd_bench_edits(args: argparse.Namespace) -> int:
    """``copyedit bench edits``: every mode on real edits, interleaved; tables, JSON, chart, bound table."""

    from ..bench import edits

    sets = load_sources(args, seed=args.seed)
    modes = args.modes.split(",")
    remote_modes = [name for name in modes if edits.MODES.get(name, {}).get("remote")]
    decoder = open_editor(args) if len(remote_modes) < len(modes) else None
    remote = open_editor(args, backend="remote") if remote_modes else None
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
    backend = "+".join(kind for kind, used in (("local", decoder), ("remote", remote)) if used) or args.backend
    write_manifest(args.out, args.name, model=args.model, selector=args.selector, threads=args.threads, backend=backend)
    print(json.dumps(result, indent=2) if args.json else edits.format_tables(result))
    print(f"\nwrote {', '.join(map(str, paths))}", file=sys.stderr)
    return 0


def cmd_bench_formats(args: argparse.Namespace) -> int:
    """``copyedit bench formats``: tokens and round trip of edit formats on before/after pairs."""

    from ..bench import formats
    from ..common.reports import write_json
    from ..decode.llama_model import Vocabulary
    from ..decode.models import resolve_model

    sets = load_sources(args)
    vocabulary = Vocabulary(resolve_model(args.model, fetch_missing=True, progress=True))
    result = formats.formats_benchmark(sets, vocabulary.tokenize)
    result["model"] = args.model
    path = write_json(result, Path(args.out), "formats")
    write_manifest(args.out, "formats", model=args.model)
    print(json.dumps(result, indent=2) if args.json else formats.format_table(result))
    print(f"\nwrote {path}", file=sys.stderr)
    return 0


def cmd_bench_check_gold(args: argparse.Namespace) -> int:
    """``copyedit bench check-gold``: every item's gold answer through its tests; 1 if one fails."""
    from ..bench import gold
    from ..bench.checks import Outcome

    sets = load_sources(args)
    checks = {name: gold.check_gold(items, timeout=args.timeout, label=name) for name, items in sets.items()}
    if args.json:
        print(json.dumps({name: check.to_json() for name, check in checks.items()}, indent=2))
    else:
        print(gold.format_report(checks))
    return 1 if any(check.count(Outcome.FAILED) for check in checks.values()) else 0


def cmd_bench_index(args: argparse.Namespace) -> int:
    """``copyedit bench index``: rewrite the generated part of ``docs/README.md`` and the README's
    table of current figures (the README beside the docs folder)."""

    from ..bench.figures import readme_text
    from ..bench.index import write_index

    docs = Path(args.docs)
    print(f"wrote {write_index(docs)}", file=sys.stderr)
    readme = docs.resolve().parent / "README.md"
    readme.write_text(readme_text(readme.parent), encoding="utf-8")
    print(f"wrote {readme}", file=sys.stderr)
    return 0


def cmd_bench_lsp(args: argparse.Namespace) -> int:
    """``copyedit bench lsp``: code-action latency, server overhead per edit, peak memory."""

    from ..bench import lsp
    from ..common.reports import write_json

    result = lsp.lsp_benchmark(server_options(args), lines=args.lines, requests=args.requests, edits=args.edits)
    path = write_json(result, Path(args.out), "lsp")
    write_manifest(args.out, "lsp", model=args.model, selector=args.selector, threads=args.threads)
    print(json.dumps(result, indent=2) if args.json else lsp.format_table(result))
    print(f"\nwrote {path}", file=sys.stderr)
    return 0


def _add_bench_apply_command(bench) -> None:
    """``bench apply``."""
    apply = bench.add_parser(
        "apply", help="changes built from gold edits (snippet, search/replace, diff, file), merged"
    )
    add_source_arguments(apply, default=["humanevalfix-python-files", "humanevalfix-js-files"])
    apply.add_argument("--forms", default="snippet,search-replace,diff,file", help="comma-separated change forms")
    apply.add_argument(
        "--modes",
        default="merge",
        help="comma-separated: merge, structure, pipeline, program, forced, rewrite, lookup, remote-program, "
        "remote-forced, remote-rewrite, and MODE@MODEL: a local mode on another model with its shipped "
        "selectors (interleaved per item)",
    )
    apply.add_argument(
        "--no-fallback",
        dest="fallback",
        action="store_false",
        help="program mode without an apply selector (--apply-selector none, a remote server): the base "
        "model's apply program (by default a rewrite: lookup locally)",
    )
    add_model_arguments(apply, remote="server")
    apply.add_argument("--seed", type=int, help="shuffle each set's items with this seed; it draws the changes too")
    apply.add_argument("--out", default="bench-results", help="folder for the JSON and Markdown outputs")
    apply.add_argument("--name", default="apply", help="file name stem of the outputs")
    apply.add_argument("--json", action="store_true", help="print the summaries as JSON")
    apply.set_defaults(func=cmd_bench_apply)


def _add_bench_snippets_command(bench) -> None:
    """``bench snippets``."""
    from ..bench import snippets

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
    add_model_arguments(parser)
    parser.add_argument("--out", default="bench-results", help="folder for the JSON and Markdown outputs")
    parser.add_argument("--name", default="snippets", help="file name stem of the outputs")
    parser.set_defaults(func=cmd_bench_snippets)


def _add_bench_kernels(bench) -> None:
    """``bench kernel`` and ``bench paper-kernel``."""
    from ..bench import paper_kernel

    kernel = bench.add_parser("kernel", help="splice (one batched eval) vs decode (one eval per token)")
    add_model_arguments(kernel)
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


def add_commands(commands) -> None:
    """``analyze`` and ``bench ...``."""
    _add_analyze_command(commands)
    bench = commands.add_parser("bench", help="benchmarks").add_subparsers(dest="bench", required=True)
    _add_bench_commands(bench)


def _add_bench_commands(bench) -> None:
    """``bench kernel``, ``paper-kernel``, ``edits``, ``apply``, ``check-gold``, ``formats``, ``lsp`` and ``index``."""
    from ..decode.edit import DEFAULT_MODEL

    _add_bench_kernels(bench)
    _add_bench_edits(bench)

    gold = bench.add_parser(
        "check-gold",
        help="run every item's gold answer (after text) through its tests: passed, failed, could not run",
        description="Run every item's gold answer through its tests and count passed, failed and could not "
        "run (a module the tests import is not installed: the [bench] extra, make bench-npm). "
        "Exit status 1 if a gold answer fails.",
    )
    add_source_arguments(gold, default=EDIT_SETS)
    gold.add_argument("--timeout", type=float, default=10.0, help="seconds an item's tests may run")
    gold.add_argument("--json", action="store_true", help="print JSON instead of the report")
    gold.set_defaults(func=cmd_bench_check_gold)

    formats = bench.add_parser("formats", help="tokens and round trip: program, search/replace, unified diff, rewrite")
    add_source_arguments(formats, default=EDIT_SETS)
    formats.add_argument("--model", default=DEFAULT_MODEL, help="the model whose tokenizer counts tokens")
    formats.add_argument("--out", default="bench-results", help="folder for formats.json")
    formats.add_argument("--json", action="store_true")
    formats.set_defaults(func=cmd_bench_formats)

    lsp = bench.add_parser("lsp", help="code-action latency, server overhead per edit, server memory")
    add_model_arguments(lsp)
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
    add_source_arguments(edits, default=["humanevalfix-python", "humanevalfix-js"])
    add_model_arguments(edits, remote="server")
    edits.add_argument(
        "--modes",
        default="program,program-none,rewrite,lookup,forced",
        help="comma-separated: program, program-none, rewrite, lookup, forced, chat (the model asked "
        "plainly: the whole file, code first, no examples); program and forced also with one speedup "
        "off (-no-force, -no-batch, -no-tags, -no-gens) or all off (-plain); "
        "remote-program, remote-rewrite, remote-forced on the --remote-url server",
    )
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


def _add_analyze_command(commands) -> None:
    analyze = commands.add_parser("analyze", help="copy ceiling, oracle exact match, span noise (no model)")
    analyze.add_argument("analysis", choices=["ceiling", "oracle", "noise", "all"])
    add_source_arguments(analyze)
    analyze.add_argument("--seed", type=int, default=0, help="seed of the span noise")
    analyze.add_argument("--json", action="store_true", help="print JSON instead of tables")
    analyze.set_defaults(func=cmd_analyze)


def _layout(text: str):
    """``--layout``'s value as a :class:`~copyedit_lsp.decode.prompt.Layout`."""
    from ..decode.prompt import Layout

    try:
        return Layout.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
