"""``copyedit train``: the span selector's data, LoRA and adapter."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def cmd_train(args: argparse.Namespace) -> int:
    """``copyedit train``: build the data, train the span selector's LoRA, export its GGUF adapter."""
    from dataclasses import replace

    from ..train.data import Recipe
    from ..train.lora import TrainOptions
    from ..train.pipeline import TrainPlan, model_card, run

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


def kind_counts(text: str) -> tuple[tuple[str, int], ...]:
    """``KIND=COUNT,...`` as the recipe's counts."""
    from ..train.data import Recipe
    from ..train.modules import MODULE_KINDS

    known = {kind for kind, _ in Recipe().counts} | set(MODULE_KINDS)
    counts = []
    for part in text.split(","):
        kind, _, count = part.partition("=")
        if kind not in known or not count.isdigit():
            raise argparse.ArgumentTypeError(f"{part!r}: give KIND=COUNT with a kind of {sorted(known)}")
        counts.append((kind, int(count)))
    return tuple(counts)


def add_commands(commands) -> None:
    """``train``."""
    from ..decode.edit import DEFAULT_MODEL

    train = commands.add_parser("train", help="train the span selector (a LoRA adapter; needs the [train] extra)")
    train.add_argument("--model", default=DEFAULT_MODEL, help="the base model (a name or a GGUF path)")
    train.add_argument("--out", default="train-runs/selector", help="the run's folder (an interrupted run resumes)")
    train.add_argument("--seed", type=int, default=0, help="the data recipe's seed")
    train.add_argument("--scale", type=float, default=1.0, help="multiply every count of the data recipe")
    train.add_argument(
        "--kinds",
        type=kind_counts,
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
    _add_optimizer_arguments(train)
    train.set_defaults(func=cmd_train)


def _add_optimizer_arguments(train: argparse.ArgumentParser) -> None:
    train.add_argument("--epochs", type=float, default=1.0)
    train.add_argument("--accumulate", type=int, default=8, help="sequences per optimizer step")
    train.add_argument("--learning-rate", type=float, default=2e-4)
    train.add_argument("--max-tokens", type=int, default=1024, help="longer sequences are left out")
    train.add_argument("--max-steps", type=int, help="stop after this many optimizer steps")
    train.add_argument("--threads", type=int, help="CPU threads (default 2)")
