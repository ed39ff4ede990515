"""``copyedit train``: build the data, turn it into decoder-faithful sequences, train, export, card.

Every step writes its output into the run's folder and is skipped when that output exists, so an
interrupted run resumes (training itself from its last checkpoint):

* ``examples.jsonl``: the synthetic edits (:mod:`.data`) and the distilled ones (:mod:`.distill`),
  checked free of evaluation text;
* ``sequences.jsonl``: each edit as the program prompt and its oracle program's tokens with the
  loss mask (:mod:`.sequence`), 5% held out for validation;
* ``checkpoint.pt``, ``adapter.gguf``, ``loss.png``, ``card.json``: the training (:mod:`.lora`).
"""

from __future__ import annotations

import collections
import hashlib
import json
import random
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ..common.reports import markdown_table
from ..core.change import change_lines, ended_text, read_change
from ..core.resolver import oracle_apply_program, oracle_program
from ..decode.models import sha256_file
from ..decode.prompt import ChatTemplate
from .changes import draw_form, training_change
from .data import (
    Example,
    Recipe,
    check_no_leak,
    collect_regions,
    forbidden_windows,
    leaks,
    node_modules_default,
    sources,
)
from .examples import build
from .lora import TrainOptions
from .sequence import TrainingSequence, answer_sequence, widened

VAL_EVERY = 20  # one edit in 20 is held out


@dataclass(frozen=True)
class TrainPlan:
    """What ``copyedit train`` does: the base model, the data recipe, the prompt, the training."""

    out: Path
    model: str = "qwen2.5-coder-0.5b"
    recipe: Recipe = Recipe()
    distill: int = 80  # self-distilled edits
    distill_fixes: int = 0  # synthetic bugs whose target becomes the base model's own rewrite (distill-fix)
    fix_languages: tuple[str, ...] = ("javascript",)  # the bugs distill_fixes draws from
    widen: int = 0  # each change begun up to this many lines earlier in the target programs (sequence.widened)
    init: Path | None = None  # an adapter GGUF the LoRA starts from (a second stage), else a new LoRA
    examples: str = "none"  # the prompt's few-shot set while training and with the adapter
    apply_share: float = 0.0  # of the edits, those learned as an apply of a change that makes them (.changes)
    max_apply_lines: int = 80  # an apply's file is at most this long
    node_modules: Path = field(default_factory=node_modules_default)
    options: TrainOptions = TrainOptions()


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(row) + "\n" for row in rows))
    tmp.replace(path)


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def build_examples(plan: TrainPlan, model_path: Path, progress: bool = True) -> list[Example]:
    """The synthetic and distilled edits of the plan (cached in ``examples.jsonl``)."""
    from tqdm import tqdm

    path = plan.out / "examples.jsonl"
    if path.exists():
        return [Example(**row) for row in _read_jsonl(path)]
    forbidden = forbidden_windows()
    total = sum(count for _, count in plan.recipe.counts)
    with tqdm(total=total, desc="synthetic edits", disable=not progress) as bar:
        files = sources(plan.node_modules)
        examples = build(plan.recipe, files, forbidden, progress=bar.update)
    if plan.distill or plan.distill_fixes:
        from ..decode.decoder import Decoder
        from .distill import distill, distill_fixes

        decoder = Decoder.load(str(model_path), n_threads=plan.options.threads, selector="none")  # the base model
        try:
            if plan.distill_fixes:
                bugs = [e for e in examples if e.kind == "bug" and e.language in plan.fix_languages]
                with tqdm(
                    total=3 * plan.distill_fixes, desc="fixes distilled (rewrites tried)", disable=not progress
                ) as bar:
                    fixes = distill_fixes(decoder, bugs, plan.distill_fixes, plan.recipe.seed, progress=bar.update)
                by_bug = {(fix.origin, fix.before): fix for fix in fixes if not leaks(fix, forbidden)}
                examples = [by_bug.get((e.origin, e.before), e) for e in examples]
            if plan.distill:
                regions = [
                    r
                    for language, paths in files.items()
                    for _, _, found in collect_regions(paths, language, replace(plan.recipe, max_lines=30), per_file=1)
                    for r in found
                ]
                used = {e.origin for e in examples}
                regions = [r for r in regions if r.origin not in used]
                with tqdm(
                    total=3 * plan.distill, desc="self-distillation (rewrites tried)", disable=not progress
                ) as bar:
                    distilled = distill(decoder, regions, plan.distill, plan.recipe.seed, progress=bar.update)
                examples += [e for e in distilled if not leaks(e, forbidden)]
        finally:
            decoder.close()
    examples = as_applies(examples, plan)
    check_no_leak(examples, forbidden)
    _write_jsonl(path, [e.to_dict() for e in examples])
    return examples


def as_applies(examples: list[Example], plan: TrainPlan) -> list[Example]:
    """``plan.apply_share`` of the edits (those of a file short enough, drawn by the seed) as
    applies: the change an assistant would write for the edit, in a drawn form, with noise."""
    rng = random.Random(f"apply/{plan.recipe.seed}")
    found = []
    for example in examples:
        short = example.before.count("\n") <= plan.max_apply_lines
        if short and example.before != example.after and rng.random() < plan.apply_share:
            form = draw_form(rng)
            change = training_change(example.before, example.after, form, example.language, rng)
            example = replace(example, kind=f"apply-{form}", instruction="", change=change)
        found.append(example)
    return found


def build_sequences(plan: TrainPlan, examples: list[Example], model_path: Path) -> list[dict]:
    """Each edit as tokens and loss mask (cached in ``sequences.jsonl``)."""
    from ..decode.llama_model import Vocabulary

    path = plan.out / "sequences.jsonl"
    if path.exists():
        return _read_jsonl(path)
    vocab = Vocabulary(model_path)
    try:
        template = ChatTemplate(vocab.metadata)
        rows = []
        for example in examples:
            if example.change:
                prompt, answer = _apply_sequence(example, template, vocab)
            else:
                prompt = vocab.tokenize(
                    template.edit_prompt(
                        example.before,
                        example.instruction,
                        mode="program",
                        splice="prefill",
                        language=example.language,
                        examples=plan.examples,
                    ),
                    special=True,
                )
                program = widened(oracle_program(example.before, example.after), example.before, plan.widen)
                answer = answer_sequence(program, example.before, vocab.tokenize, vocab.piece)
            digest = int(hashlib.sha256((example.before + example.instruction).encode()).hexdigest(), 16)
            rows.append(
                {
                    "kind": example.kind,
                    "language": example.language,
                    "split": "val" if digest % VAL_EVERY == 0 else "train",
                    "tokens": prompt + answer.tokens,
                    "chosen": [False] * len(prompt) + answer.chosen,
                }
            )
    finally:
        vocab.close()
    _write_jsonl(path, rows)
    return rows


def _apply_sequence(example: Example, template: ChatTemplate, vocab) -> tuple[list[int], TrainingSequence]:
    """An apply's prompt and its oracle apply program as the decoder runs them (the file's lines
    ended: :func:`~copyedit_lsp.core.change.ended_text`)."""
    change = read_change(example.change, example.kind.removeprefix("apply-"))
    before, after = ended_text(example.before), ended_text(example.after)
    prompt = template.apply_prompt(before, change, mode="program", language=example.language)
    program = oracle_apply_program(before, after, change_lines(change))
    answer = answer_sequence(program, before, vocab.tokenize, vocab.piece, change=change)
    return vocab.tokenize(prompt, special=True), answer


def card(plan: TrainPlan, examples: list[Example], rows: list[dict], state, adapter: Path) -> dict:
    """The model card's facts: data kinds and counts, tokens, steps, time, losses, sha256."""
    kept = [r for r in rows if len(r["tokens"]) <= plan.options.max_tokens]
    return {
        "base_model": plan.model,
        "prompt_examples": plan.examples,
        "recipe": asdict(plan.recipe)
        | {
            "distill": plan.distill,
            "distill_fixes": plan.distill_fixes,
            "fix_languages": list(plan.fix_languages),
            "widen": plan.widen,
            "apply_share": plan.apply_share,
        },
        "init": None if plan.init is None else {"adapter": plan.init.name, "sha256": sha256_file(plan.init)},
        "options": asdict(plan.options),
        "examples": dict(collections.Counter(f"{e.kind}/{e.language}" for e in examples)),
        "sequences": {
            "train": sum(r["split"] == "train" for r in kept),
            "val": sum(r["split"] == "val" for r in kept),
            "left out (too long)": len(rows) - len(kept),
        },
        "steps": state.step,
        "trained_sequences": state.seen,
        "trained_tokens": state.tokens,
        "train_seconds": round(state.seconds, 1),
        "tokens_per_second": round(state.tokens / max(state.seconds, 1e-9), 1),
        "final_train_loss": round(
            sum(loss for _, loss in state.train_loss[-10:]) / max(len(state.train_loss[-10:]), 1), 4
        ),
        "val_loss": [(step, round(loss, 4)) for step, loss in state.val_loss],
        "adapter": adapter.name,
        "sha256": sha256_file(adapter),
        "bytes": adapter.stat().st_size,
    }


TRAINING_HEADERS = ("steps", "sequences", "tokens", "seconds", "tokens/s", "final training loss (mean of 10 steps)",
                    "validation loss")  # fmt: skip


def _training_table(facts: dict) -> str:
    """The card's one-row table of the training run."""
    losses = ", ".join(f"{loss} (step {step})" for step, loss in facts["val_loss"]) or "-"
    row = [facts["steps"], facts["trained_sequences"], f"{facts['trained_tokens']:,}", f"{facts['train_seconds']:,.0f}",
           facts["tokens_per_second"], facts["final_train_loss"], losses]  # fmt: skip
    return markdown_table(TRAINING_HEADERS, [row], right=range(6))


def _purpose(applies: float) -> tuple[str, str]:
    """What a selector trained with ``applies`` of its edits as applies writes, and what uses it."""
    if applies:
        what = f"apply programs (a change merged into a file: {applies:.0%} of its edits) and edit programs"
        return what, "The `applySelector` setting names it"
    return "copy/gen edit programs", "Program mode uses it by default"


def model_card(facts: dict, command: str) -> str:
    """The card as Markdown: what the adapter is, the data, the training, the losses."""
    options, recipe = facts["options"], facts["recipe"]
    layers = "every layer" if options["top_layers"] is None else f"the last {options['top_layers']} layers"
    task, used = _purpose(recipe.get("apply_share", 0.0))
    lines = [
        f"# Span selector for {facts['base_model']}",
        "",
        f"A span selector: a LoRA adapter (llama.cpp GGUF, its tensors in Q8_0, `{facts['adapter']}`, {facts['bytes']:,} "
        f"bytes, sha256 `{facts['sha256']}`) that teaches {facts['base_model']} to write {task}. "
        f"{used}; its prompt has no few-shot examples (`examples = {facts['prompt_examples']}`).",
        "",
        "Rebuild it from scratch (the data is built from this machine's code, never committed):",
        "",
        f"    {command}",
        "",
        *(
            [
                f"A second stage: the LoRA starts from the adapter `{facts['init']['adapter']}` "
                f"(sha256 `{facts['init']['sha256']}`) and trains on new data.",
                "",
            ]
            if facts.get("init")
            else []
        ),
        "## Data",
        "",
        markdown_table(["kind / language", "edits"], sorted(facts["examples"].items()), right=(1,)),
        "",
        f"Sequences: {facts['sequences']['train']} for training, {facts['sequences']['val']} held out, "
        f"{facts['sequences']['left out (too long)']} left out (over {options['max_tokens']} tokens). "
        f"Data seed {recipe['seed']}.",
        "",
        "## Training",
        "",
        f"LoRA r={options['rank']}, alpha={options['alpha']:g}, dropout {options['dropout']:g}, on q/k/v/o/gate/up/down "
        f"of {layers}; AdamW, learning rate {options['learning_rate']:g} (warmup, cosine), {options['accumulate']} sequences "
        f"a step, {options['epochs']:g} epoch, float32 on {options['threads']} threads. The loss covers only the tokens "
        "the model chooses at inference (ops, digits, gen bodies, `</program>`).",
        "",
        _training_table(facts),
        "",
        "![loss curve](" + facts["adapter"].removesuffix(".gguf") + "-loss.png)",
        "",
    ]
    return "\n".join(lines)


def run(plan: TrainPlan, progress: bool = True) -> dict:
    """Every step of the plan; returns the card (also written to ``card.json``)."""
    from ..decode.llama_model import Vocabulary
    from ..decode.models import resolve_model
    from .lora import plot_loss, train

    plan.out.mkdir(parents=True, exist_ok=True)
    model_path = Path(resolve_model(plan.model, fetch_missing=True, progress=progress))
    started = time.perf_counter()
    examples = build_examples(plan, model_path, progress)
    rows = build_sequences(plan, examples, model_path)
    vocab = Vocabulary(model_path)
    architecture = vocab.metadata.get("general.architecture", "qwen2")
    vocab.close()
    state = train(
        model_path,
        plan.out / "sequences.jsonl",
        plan.out,
        plan.options,
        architecture=architecture,
        init=plan.init,
        progress=progress,
    )
    plot_loss(state, plan.out / "loss.png", f"span selector LoRA on {plan.model}")
    facts = card(plan, examples, rows, state, plan.out / "adapter.gguf") | {
        "wall_seconds": round(time.perf_counter() - started, 1)
    }
    (plan.out / "card.json").write_text(json.dumps(facts, indent=1))
    return facts
