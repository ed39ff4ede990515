"""LoRA training of the span selector on the CPU (PyTorch, transformers, peft), and its export as a
llama.cpp LoRA adapter GGUF.

transformers reads the shipped GGUF directly (dequantized to float32, tokenizer included), so the
adapter is trained on the weights llama.cpp runs, in their unquantized form.  The loss covers
only the tokens the model chooses at inference (:mod:`.sequence`).  Training resumes from its
last checkpoint; every ``eval_every`` steps the validation loss is measured and a checkpoint
written.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# Hugging Face module names -> llama.cpp tensor names, for every linear projection of a layer.
PROJECTIONS = {
    "q_proj": "attn_q",
    "k_proj": "attn_k",
    "v_proj": "attn_v",
    "o_proj": "attn_output",
    "gate_proj": "ffn_gate",
    "up_proj": "ffn_up",
    "down_proj": "ffn_down",
}
# llama-architecture GGUFs store Q and K rows permuted for RoPE: adapters on them would need the
# same permutation, so they are left out there.
ROPE_PERMUTED = {"llama": ("q_proj", "k_proj")}


@dataclass(frozen=True)
class TrainOptions:
    """The LoRA's shape and the optimisation."""

    rank: int = 32
    alpha: float = 64.0
    top_layers: int | None = 12  # LoRA on the last N layers only (backward stops below them); None: all
    dropout: float = 0.05
    learning_rate: float = 2e-4
    warmup_steps: int = 20
    epochs: float = 1.0
    accumulate: int = 8  # sequences per optimizer step
    max_tokens: int = 1024  # longer sequences are left out
    eval_every: int = 25  # optimizer steps
    threads: int = 2
    bf16: bool = False  # autocast measured slower than float32 here (55 against 96 tokens/s)
    seed: int = 0
    max_steps: int | None = None  # stop early (tests, a quick look)


@dataclass
class TrainState:
    """Where a run stands: the optimizer step, sequences seen, and the loss curves."""

    step: int = 0
    seen: int = 0
    tokens: int = 0
    seconds: float = 0.0
    train_loss: list[tuple[int, float]] | None = None
    val_loss: list[tuple[int, float]] | None = None

    def __post_init__(self):
        self.train_loss = self.train_loss or []
        self.val_loss = self.val_loss or []


def load_sequences(path: Path, max_tokens: int) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if len(r["tokens"]) <= max_tokens and any(r["chosen"])]


def load_base(gguf: Path):
    """The GGUF's model dequantized to float32, by transformers."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    model.config.use_cache = False
    return model


def targets(architecture: str) -> list[str]:
    skip = ROPE_PERMUTED.get(architecture, ())
    return [name for name in PROJECTIONS if name not in skip]


def with_lora(model, architecture: str, options: TrainOptions):
    from peft import LoraConfig, get_peft_model

    layers = model.config.num_hidden_layers
    top = layers if options.top_layers is None else min(options.top_layers, layers)
    config = LoraConfig(
        r=options.rank,
        lora_alpha=options.alpha,
        lora_dropout=options.dropout,
        target_modules=targets(architecture),
        layers_to_transform=list(range(layers - top, layers)),
        bias="none",
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


def sequence_loss(model, row: dict, bf16: bool):
    """Mean cross-entropy over the chosen tokens of one sequence, and their count."""
    import torch

    tokens = torch.tensor([row["tokens"]])
    chosen = torch.tensor(row["chosen"][1:])
    causal = model.get_base_model()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        hidden = causal.model(input_ids=tokens).last_hidden_state[0, :-1]
        logits = causal.lm_head(hidden[chosen])  # the output layer only where a token is chosen
    loss = torch.nn.functional.cross_entropy(logits.float(), tokens[0, 1:][chosen])
    return loss, int(chosen.sum())


def evaluate(model, rows: list[dict], bf16: bool) -> float:
    """The validation loss: cross-entropy per chosen token over ``rows``."""
    import torch

    model.eval()
    total = count = 0.0
    with torch.no_grad():
        for row in rows:
            loss, n = sequence_loss(model, row, bf16)
            total += float(loss) * n
            count += n
    model.train()
    return total / max(count, 1)


def _schedule(rows: int, options: TrainOptions) -> list[int]:
    """The order training sees ``rows`` sequences in: each epoch shuffled by its own seed."""
    order = list(range(rows))
    schedule: list[int] = []
    for epoch in range(max(1, math.ceil(options.epochs))):
        random.Random(options.seed + epoch).shuffle(order)
        schedule += order
    return schedule[: int(rows * options.epochs)]


def _optimizer(trainable: list, options: TrainOptions, total_steps: int):
    """AdamW with a linear warmup and a cosine decay over ``total_steps``."""
    import torch

    optimizer = torch.optim.AdamW(trainable, lr=options.learning_rate, weight_decay=0.0)
    warmup = min(options.warmup_steps, max(total_steps // 10, 1))

    def lr_at(step: int) -> float:
        return min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(step / max(total_steps, 1), 1.0)))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lr_at)


def _save(checkpoint: Path, model, optimizer, scheduler, state: TrainState) -> None:
    import torch

    lora = {k: v for k, v in model.state_dict().items() if "lora_" in k}
    torch.save(
        {
            "lora": lora,
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "state": asdict(state),
        },
        checkpoint.with_suffix(".tmp"),
    )
    checkpoint.with_suffix(".tmp").replace(checkpoint)


def _resume(checkpoint: Path, model, optimizer, scheduler) -> TrainState:
    """The state of the run saved in ``checkpoint`` (its LoRA and optimizer restored), or a new one."""
    import torch

    if not checkpoint.exists():
        return TrainState()
    saved = torch.load(checkpoint, weights_only=False)
    model.load_state_dict(saved["lora"], strict=False)
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
    return TrainState(**saved["state"])


def _step(model, optimizer, scheduler, trainable: list, batch: list[dict], bf16: bool) -> list[float]:
    """One optimizer step over ``batch`` (gradients averaged, clipped to norm 1); each sequence's loss."""
    import torch

    optimizer.zero_grad()
    losses = []
    for row in batch:
        loss, _ = sequence_loss(model, row, bf16)
        (loss / len(batch)).backward()
        losses.append(loss.item())
    torch.nn.utils.clip_grad_norm_(trainable, 1.0)
    optimizer.step()
    scheduler.step()
    return losses


def train(
    gguf: Path,
    sequences: Path,
    out: Path,
    options: TrainOptions,
    *,
    architecture: str,
    init: Path | None = None,
    progress: bool = True,
) -> TrainState:
    """Train a LoRA on ``sequences`` (a JSONL of ``tokens``/``chosen``/``split``), checkpointing in
    ``out``; resumes where a previous run stopped.  ``init``: an adapter GGUF the LoRA starts from
    (a second stage on new data).  Returns the final state."""
    import torch
    from tqdm import tqdm

    torch.manual_seed(options.seed)
    torch.set_num_threads(options.threads)
    rows = load_sequences(sequences, options.max_tokens)
    train_rows, val_rows = ([r for r in rows if r["split"] == split] for split in ("train", "val"))
    schedule = _schedule(len(train_rows), options)
    total_steps = math.ceil(len(schedule) / options.accumulate)
    if options.max_steps is not None:
        total_steps = min(total_steps, options.max_steps)
    model = with_lora(load_base(gguf), architecture, options)
    if init is not None:
        load_adapter(model, init)  # a checkpoint, if there is one, replaces it below
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer, scheduler = _optimizer(trainable, options, total_steps)
    checkpoint = out / "checkpoint.pt"
    state = _resume(checkpoint, model, optimizer, scheduler)
    model.train()
    bar = tqdm(total=total_steps, initial=state.step, desc="training", unit="step", disable=not progress)
    while state.step < total_steps:
        started = time.perf_counter()
        batch = [train_rows[i] for i in schedule[state.seen : state.seen + options.accumulate]]
        losses = _step(model, optimizer, scheduler, trainable, batch, options.bf16)
        _record(state, batch, losses, time.perf_counter() - started)
        bar.set_postfix(loss=f"{state.train_loss[-1][1]:.3f}", tok_s=f"{state.tokens / state.seconds:.0f}")
        bar.update(1)
        if state.step % options.eval_every == 0 or state.step == total_steps:
            if val_rows:
                state.val_loss.append((state.step, evaluate(model, val_rows, options.bf16)))
                bar.write(f"step {state.step}: validation loss {state.val_loss[-1][1]:.4f}")
            _save(checkpoint, model, optimizer, scheduler, state)
    bar.close()
    (out / "state.json").write_text(json.dumps(asdict(state)))
    export_gguf(model, out / "adapter.gguf", architecture=architecture, alpha=options.alpha)
    return state


def _record(state: TrainState, batch: list[dict], losses: list[float], seconds: float) -> None:
    """Count one optimizer step of ``batch`` into ``state``: steps, sequences, tokens, time, mean loss."""
    state.step, state.seen = state.step + 1, state.seen + len(batch)
    state.tokens += sum(len(row["tokens"]) for row in batch)
    state.seconds += seconds
    state.train_loss.append((state.step, sum(losses) / len(losses)))


def load_trained(gguf: Path, out: Path, architecture: str, options: TrainOptions):
    """The base model with the LoRA of ``out``'s last checkpoint (disable it with ``disable_adapter()``)."""
    import torch

    model = with_lora(load_base(gguf), architecture, options)
    model.load_state_dict(torch.load(out / "checkpoint.pt", weights_only=False)["lora"], strict=False)
    return model.eval()


def _llama_name(name: str) -> str | None:
    """The llama.cpp tensor name of a PEFT LoRA parameter (None for any other parameter)."""
    import re

    match = re.search(r"layers\.(\d+)\.\w+\.(\w+_proj)\.lora_([AB])\.", name)
    if match is None:
        return None
    layer, projection, which = match.groups()
    return f"blk.{layer}.{PROJECTIONS[projection]}.weight.lora_{which.lower()}"


def lora_arrays(model) -> dict[str, Any]:
    """llama.cpp tensor name -> PEFT's lora_A [r, in] / lora_B [out, r] array, unchanged."""
    return {
        llama: tensor.float().numpy()
        for name, tensor in model.state_dict().items()
        if (llama := _llama_name(name)) is not None
    }


def load_adapter(model, path: Path) -> None:
    """Set the LoRA of ``model`` to an exported adapter GGUF's (the same rank, layers and projections)."""
    import gguf
    import torch

    arrays = {
        tensor.name: gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        for tensor in gguf.GGUFReader(str(path)).tensors
    }
    state = {}
    for name, tensor in model.state_dict().items():
        llama = _llama_name(name)
        if llama is None:
            continue
        if llama not in arrays or tuple(arrays[llama].shape) != tuple(tensor.shape):
            raise ValueError(f"{path} does not fit this LoRA: {llama} missing or not {tuple(tensor.shape)}")
        state[name] = torch.from_numpy(arrays.pop(llama).astype("float32"))
    if arrays:
        raise ValueError(f"{path} has tensors this LoRA lacks: {', '.join(sorted(arrays)[:3])}")
    model.load_state_dict(state, strict=False)


def export_gguf(model, path: Path, *, architecture: str, alpha: float) -> None:
    """Write the LoRA as a llama.cpp adapter GGUF, its tensors in Q8_0: half of float16's size,
    and the selectors measure the same (docs/training.md: Storage)."""
    import gguf

    writer = gguf.GGUFWriter(str(path), arch=architecture)
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", float(alpha))
    for name, array in sorted(lora_arrays(model).items()):
        quantized = gguf.quants.quantize(array, gguf.GGMLQuantizationType.Q8_0)
        writer.add_tensor(name, quantized, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def plot_loss(state: TrainState, path: Path, title: str) -> None:
    """The training (smoothed) and validation loss curves as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [s for s, _ in state.train_loss]
    losses = [loss for _, loss in state.train_loss]
    smooth = [sum(losses[max(0, i - 9) : i + 1]) / len(losses[max(0, i - 9) : i + 1]) for i in range(len(losses))]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, losses, alpha=0.3, label="training (per step)")
    ax.plot(steps, smooth, label="training (mean of 10 steps)")
    if state.val_loss:
        ax.plot([s for s, _ in state.val_loss], [loss for _, loss in state.val_loss], "o-", label="validation")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("cross-entropy per chosen token")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
