"""Qwen2.5-architecture models with random weights, for timing without a download.

A kernel's speed depends on a model's shapes and weight types, not on the weights' values, so
:func:`write_gguf` writes a GGUF of a shipped size's shapes whose tensors have the types
llama.cpp's Q4_K_M recipe gives them (the shipped files' types, tensor by tensor) and random
contents, and :func:`transformers_config` gives the same shapes as a ``Qwen2Config``'s arguments
(transformers builds the random model itself). Only numpy and the ``gguf`` package are needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROPE_BASE = 1_000_000.0
RMS_EPS = 1e-6
CONTEXT = 32_768


@dataclass(frozen=True)
class Shape:
    """One Qwen2.5 size's shapes (its Hugging Face config)."""

    name: str
    hidden: int
    ffn: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    tied: bool  # the output projection is the token embedding
    # the layers whose attn_v and ffn_down have more bits (Q6_K): the shipped file's, where one is
    # shipped; else llama.cpp's Q4_K_M rule (the same count of layers either way)
    more_bits: tuple[int, ...] = ()

    @property
    def kv_width(self) -> int:
        return self.kv_heads * self.hidden // self.heads


# name, hidden, ffn, layers, heads, key-value heads, vocabulary, tied, the layers with more bits
SHAPES = {
    shape.name: shape
    for shape in (
        Shape("0.5b", 896, 4864, 24, 14, 2, 151_936, True, (0, 1, 3, 6, 7, 8, 9, 10, 13, 16, 19, 21)),
        Shape("1.5b", 1536, 8960, 28, 12, 2, 151_936, True, (0, 1, 5, 6, 7, 8, 9, 10, 13, 16, 19, 21, 24, 27)),
        Shape("7b", 3584, 18944, 28, 28, 4, 152_064, False),
    )
}

# The byte offsets of a block's fp16 scales (ggml-common.h), for each type written.
_SCALES = {"Q8_0": (0,), "Q5_0": (0,), "Q4_K": (0, 2), "Q6_K": (208,)}
_FALLBACK = {"Q4_K": "Q5_0", "Q6_K": "Q8_0"}  # for rows that are not a multiple of 256 values


def more_bits(shape: Shape, layer: int) -> bool:
    """Whether Q4_K_M gives ``layer``'s ``attn_v`` and ``ffn_down`` Q6_K (llama.cpp's ``use_more_bits``
    where the shape lists no layers)."""
    if shape.more_bits:
        return layer in shape.more_bits
    n = shape.layers
    return layer < n // 8 or layer >= 7 * n // 8 or (layer - n // 8) % 3 == 2


def quant_type(shape: Shape, role: str, layer: int, row: int) -> str:
    """The type Q4_K_M gives tensor ``role`` of ``layer`` whose rows hold ``row`` values."""
    wide = role == "output" or (role in ("attn_v", "ffn_down") and more_bits(shape, layer))
    kind = "Q6_K" if wide else "Q4_K"
    return kind if row % 256 == 0 else _FALLBACK[kind]


def tensor_layout(shape: Shape) -> list[tuple[str, tuple[int, int] | tuple[int], str]]:
    """Every tensor as (GGUF name, numpy shape (rows, row) or (n,), type)."""
    h, kv, n = shape.hidden, shape.kv_width, shape.layers
    layout: list[tuple[str, tuple[int, int] | tuple[int], str]] = [
        ("token_embd.weight", (shape.vocab, h), quant_type(shape, "token_embd", 0, h)),
        ("output_norm.weight", (h,), "F32"),
        ("output.weight", (shape.vocab, h), quant_type(shape, "output", 0, h)),
    ]
    for i in range(n):
        matrices = {
            "attn_q": (h, h),
            "attn_k": (kv, h),
            "attn_v": (kv, h),
            "attn_output": (h, h),
            "ffn_gate": (shape.ffn, h),
            "ffn_up": (shape.ffn, h),
            "ffn_down": (h, shape.ffn),
        }
        layout += [(f"blk.{i}.attn_norm.weight", (h,), "F32"), (f"blk.{i}.ffn_norm.weight", (h,), "F32")]
        layout += [
            (f"blk.{i}.{role}.bias", (rows,), "F32")
            for role, (rows, _) in matrices.items()
            if role in ("attn_q", "attn_k", "attn_v")
        ]
        layout += [
            (f"blk.{i}.{role}.weight", dims, quant_type(shape, role, i, dims[1])) for role, dims in matrices.items()
        ]
    return layout


def _random_blocks(rng: np.random.Generator, rows: int, row: int, kind: str) -> np.ndarray:
    """Random quantized rows whose fp16 scales are a small finite number (no inf or NaN)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    values, block_bytes = GGML_QUANT_SIZES[GGMLQuantizationType[kind]]
    blocks = rng.integers(0, 256, size=(rows * row // values, block_bytes), dtype=np.uint8)
    for offset in _SCALES[kind]:
        blocks[:, offset : offset + 2] = np.frombuffer(np.float16(2**-10).tobytes(), dtype=np.uint8)
    return blocks.reshape(rows, -1)


def write_gguf(shape: Shape, path: Path, *, seed: int = 0) -> Path:
    """Write a Qwen2.5 GGUF of ``shape`` with random weights to ``path``; tensors of one shape and
    type share their random contents (their bytes are written once per tensor all the same)."""
    import gguf

    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_name(f"random Qwen2.5 {shape.name}")
    writer.add_block_count(shape.layers)
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(shape.hidden)
    writer.add_feed_forward_length(shape.ffn)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.kv_heads)
    writer.add_rope_freq_base(ROPE_BASE)
    writer.add_layer_norm_rms_eps(RMS_EPS)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    # a vocabulary of the right size (token ids are all a timing needs); printable and distinct
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list([f"t{i}" for i in range(shape.vocab)])
    writer.add_token_types([gguf.TokenType.NORMAL] * shape.vocab)
    writer.add_token_merges(["t 0"])
    writer.add_eos_token_id(shape.vocab - 1)
    contents: dict[tuple, np.ndarray] = {}
    for name, dims, kind in tensor_layout(shape):
        key = (dims, kind)
        if key not in contents:
            if kind == "F32":
                contents[key] = (1 + 0.01 * rng.standard_normal(dims)).astype(np.float32)
            else:
                contents[key] = _random_blocks(rng, dims[0], dims[1], kind)
        raw = None if kind == "F32" else gguf.GGMLQuantizationType[kind]
        writer.add_tensor(name, contents[key], raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def transformers_config(shape: Shape) -> dict:
    """``Qwen2Config`` arguments for ``shape``."""
    return {
        "vocab_size": shape.vocab,
        "hidden_size": shape.hidden,
        "intermediate_size": shape.ffn,
        "num_hidden_layers": shape.layers,
        "num_attention_heads": shape.heads,
        "num_key_value_heads": shape.kv_heads,
        "max_position_embeddings": CONTEXT,
        "rope_theta": ROPE_BASE,
        "rms_norm_eps": RMS_EPS,
        "tie_word_embeddings": shape.tied,
    }
