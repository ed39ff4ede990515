"""The paper's kernel experiment on Qwen2.5 shapes with random weights, unattended.

Copying a span of S tokens by one batched forward pass against decoding it one token at a time
(:mod:`~copyedit_lsp.bench.kernel`'s methods), after a prefix, for each shape of
:data:`~copyedit_lsp.bench.random_model.SHAPES`: first through PyTorch/transformers (the
paper's kind of setup: no build, a ``Qwen2ForCausalLM`` built with random weights), then through
llama.cpp (a random GGUF of the shipped files' types). Each phase writes ``<phase>.json``,
``<phase>.md`` and ``<phase>.png`` under ``--out`` after every shape (and its manifest first), so a
run cut short still leaves what it measured. Needs numpy, torch and transformers for the first
phase, llama-cpp-python and ``gguf`` for the second; nothing of the editor, and no download.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..common.reports import markdown_table
from . import kernel
from .manifest import run_manifest, write_manifest
from .random_model import SHAPES, Shape, transformers_config, write_gguf

PHASES = ("transformers", "llama-cpp")
PROG = "python -m copyedit_lsp.bench.paper_kernel"  # where copyedit is not installed (a bare GPU machine)
SPANS = (8, 32, 128, 512)
PAPER = "6.8x-303x: Qwen2.5 1.5B and 7B, transformers on an A100, spans of 8 to 512 tokens"


class TorchModel:
    """A transformers causal LM behind the kernel benchmark's model interface: ``prefill``,
    ``truncate``, ``eval`` (logits copied to the host, as llama.cpp's are) and ``n_ctx``."""

    def __init__(self, shape: Shape, device: str, threads: int | None):
        import inspect

        import torch
        from transformers import DynamicCache, Qwen2Config, Qwen2ForCausalLM

        if threads:
            torch.set_num_threads(threads)
        self.torch, self.device, self.name = torch, device, f"transformers Qwen2.5 {shape.name} (random)"
        self.dtype = torch.bfloat16 if device == "cuda" else torch.float32
        config = Qwen2Config(**transformers_config(shape))
        config._attn_implementation = "sdpa"
        torch.manual_seed(0)
        default = torch.get_default_dtype()
        torch.set_default_dtype(self.dtype)
        try:
            with torch.device(device):
                self.model = Qwen2ForCausalLM(config).eval()
        finally:
            torch.set_default_dtype(default)
        parameters = inspect.signature(self.model.forward).parameters
        # the names differ between transformers releases
        self._keep = next((name for name in ("logits_to_keep", "num_logits_to_keep") if name in parameters), None)
        self._cache = "cache" if "cache" in parameters else "past_key_values"
        self.cache = DynamicCache()
        self.n_ctx = config.max_position_embeddings

    def kernel_facts(self) -> dict:
        torch = self.torch
        where = torch.cuda.get_device_name() if self.device == "cuda" else f"CPU, {torch.get_num_threads()} threads"
        return {
            "model": self.name,
            "device": f"{where}, {self.dtype}".replace("torch.", ""),
            "torch": torch.__version__,
            "n_threads": torch.get_num_threads(),
        }

    def prefill(self, tokens: Sequence[int]) -> None:
        self.eval(tokens)

    def truncate(self, length: int) -> None:
        if extra := self.cache.get_seq_length() - length:
            self.cache.crop(-extra)  # a negative count removes that many tokens, in 4.x and 5.x alike

    def eval(self, tokens: Sequence[int], *, logits_from: int | None = None) -> np.ndarray:
        """The last position's logits, or every position's from ``logits_from`` on."""
        torch = self.torch
        keep = 1 if logits_from is None else len(tokens) - logits_from
        extra = {self._cache: self.cache, **({self._keep: keep} if self._keep else {})}
        with torch.inference_mode():
            ids = torch.tensor([list(tokens)], device=self.device)
            logits = self.model(input_ids=ids, use_cache=True, **extra).logits[0, -keep:]
            rows = logits.float().cpu().numpy()
        return rows[-1] if logits_from is None else rows

    def close(self) -> None:
        del self.model, self.cache
        if self.device == "cuda":
            self.torch.cuda.empty_cache()


def _open_llama(shape: Shape, args: argparse.Namespace, folder: Path):
    """The llama.cpp model of ``shape`` (its random GGUF written to ``folder`` first)."""
    from ..decode.llama_model import LlamaModel

    path = write_gguf(shape, folder / f"qwen2.5-{shape.name}-random.gguf")
    try:
        return LlamaModel(
            path, n_ctx=args.prefix + max(args.spans) + 64, n_threads=args.threads, n_gpu_layers=args.gpu_layers
        )
    finally:
        path.unlink()  # llama.cpp holds what it loaded (read, or mapped and kept open)


def _open(phase: str, shape: Shape, args: argparse.Namespace, folder: Path):
    if phase == "transformers":
        import torch

        device = args.device if args.device != "auto" else "cuda" if torch.cuda.is_available() else "cpu"
        return TorchModel(shape, device, args.threads)
    return _open_llama(shape, args, folder)


def measure(phase: str, shape: Shape, args: argparse.Namespace, folder: Path) -> dict:
    """One shape's kernel result through ``phase``, on random token ids."""
    started = time.perf_counter()
    model = _open(phase, shape, args, folder)
    loaded = time.perf_counter() - started
    try:
        tokens = np.random.default_rng(0).integers(0, shape.vocab, args.prefix + max(args.spans)).tolist()
        result = kernel.kernel_benchmark(
            model, spans=args.spans, prefix_tokens=args.prefix, trials=args.trials, tokens=tokens, progress=False
        )
    finally:
        model.close()
    return {"shape": shape.name, **result, "load_s": loaded, "seconds": time.perf_counter() - started}


def phase_table(phase: str, results: Sequence[dict]) -> str:
    """The phase's speedups by shape and span (and each shape's decode speed), as Markdown."""
    spans = sorted({row["span"] for result in results if "rows" in result for row in result["rows"]})
    rows = []
    for result in results:
        if "rows" not in result:
            rows.append([result["shape"], *(["-"] * len(spans)), f"failed: {result['error']}"])
            continue
        speedups = {row["span"]: f"{row['speedup']:.1f}x" for row in result["rows"]}
        decode = np.median([row["decode_tok_s"] for row in result["rows"]])
        rows.append(
            [result["shape"], *(speedups.get(span, "-") for span in spans), f"{decode:.0f} tok/s, {result['device']}"]
        )
    header = ["shape", *(f"S={span}" for span in spans), "decode, device"]
    return "\n".join(
        [
            f"{phase}: splice speedup (decode time / one batched pass) by span S",
            "",
            markdown_table(header, rows, right=range(1, len(spans) + 1)),
            "",
            f"the paper: {PAPER}",
        ]
    )


def write_phase(out: Path, phase: str, results: Sequence[dict]) -> None:
    """``<phase>.json`` and ``.md`` now, ``.png`` too where matplotlib is installed."""
    (out / f"{phase}.json").write_text(json.dumps(list(results), indent=1) + "\n")
    (out / f"{phase}.md").write_text(phase_table(phase, results) + "\n")
    try:
        plot(out / f"{phase}.png", phase, results)
    except ImportError:
        print(f"no matplotlib here: {phase}.png left out (`--plot --out {out}` draws it)", file=sys.stderr)


def plot(path: Path, phase: str, results: Sequence[dict]) -> None:
    """Speedup against span, log-log, one line per shape, the paper's range as dashed lines."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import ScalarFormatter

    figure = Figure(figsize=(6, 4.5))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for result in results:
        if "rows" in result:
            spans = [row["span"] for row in result["rows"]]
            axes.loglog(spans, [row["speedup"] for row in result["rows"]], "o-", base=2, label=result["shape"])
            axes.set_xticks(spans, [str(span) for span in spans])
    for bound in (6.8, 303):
        axes.axhline(bound, color="gray", linestyle="--", linewidth=0.8)
    axes.yaxis.set_major_formatter(ScalarFormatter())
    axes.set_xlabel("span S (tokens)")
    axes.set_ylabel("speedup t_decode / t_splice")
    devices = sorted({result["device"] for result in results if "rows" in result})
    axes.set_title(f"{phase}: {'; '.join(devices)}", fontsize=9)
    if devices:
        axes.legend(title="Qwen2.5 shape (dashed: the paper's 6.8x and 303x)", fontsize=8, title_fontsize=8)
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    def names(text: str) -> list[str]:
        return [name for name in text.split(",") if name]

    parser.add_argument("--out", required=True, help="folder for each phase's json, md and png")
    parser.add_argument("--shapes", type=names, default=list(SHAPES), help=f"of {', '.join(SHAPES)}")
    parser.add_argument("--phases", type=names, default=list(PHASES), help=f"of {', '.join(PHASES)}, in order")
    parser.add_argument("--spans", type=lambda text: [int(span) for span in names(text)], default=list(SPANS))
    parser.add_argument("--prefix", type=int, default=1024, help="tokens in the KV cache before each span")
    parser.add_argument("--trials", type=int, default=3, help="timed trials after one warm-up")
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto", help="transformers' device")
    parser.add_argument("--gpu-layers", type=int, default=-1, help="llama.cpp's nGpuLayers (-1: all)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all)")
    parser.add_argument("--plot", action="store_true", help="only draw the pngs of --out's json files")


def run(args: argparse.Namespace, command: str | None = None) -> int:
    """Every phase over every shape, writing as it goes; 1 if any shape failed. ``command``: the
    manifests' (by default ``copyedit`` and this process's arguments)."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.plot:
        for phase in PHASES:
            if (out / f"{phase}.json").is_file():
                plot(out / f"{phase}.png", phase, json.loads((out / f"{phase}.json").read_text()))
        return 0
    failed = False
    with tempfile.TemporaryDirectory(prefix="paper-kernel-") as folder:
        for phase in args.phases:
            write_manifest(phase_manifest(phase, args, command), out, phase)
            results: list[dict] = []
            for name in args.shapes:
                print(f"{time.strftime('%H:%M:%S')} {phase} {name}", file=sys.stderr, flush=True)
                try:
                    results.append(measure(phase, SHAPES[name], args, Path(folder)))
                except Exception as error:  # one shape's failure (memory, a build) leaves the others
                    traceback.print_exc()
                    results.append({"shape": name, "error": f"{type(error).__name__}: {error}"})
                    failed = True
                write_phase(out, phase, results)
            print(phase_table(phase, results), file=sys.stderr, flush=True)
    return int(failed)


def phase_manifest(phase: str, args: argparse.Namespace, command: str | None) -> dict:
    """The run's manifest (:mod:`~copyedit_lsp.bench.manifest`) with the phase's engine: torch,
    transformers and the GPU, or the llama.cpp build."""
    manifest = run_manifest(model=None, selector=None, threads=args.threads)
    if command:
        manifest["command"] = command
    if phase == "transformers":
        import torch
        import transformers

        gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
        manifest.update(llama_cpp=None, torch=torch.__version__, transformers=transformers.__version__, gpu=gpu)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__)
    add_arguments(parser)
    arguments = list(sys.argv[1:] if argv is None else argv)
    return run(parser.parse_args(arguments), shlex.join([*PROG.split(), *arguments]))


if __name__ == "__main__":
    sys.exit(main())
