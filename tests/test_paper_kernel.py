"""The paper's kernel experiment on random-weight Qwen2.5 shapes (docs/gpu.md): the random GGUF has
the shipped file's tensors and runs in llama.cpp, the transformers model's cache is cut back
exactly, and a run writes each phase's table as it goes, one shape's failure leaving the rest."""

import json

import gguf
import numpy as np
import pytest

from copyedit_lsp.bench import paper_kernel
from copyedit_lsp.bench.random_model import SHAPES, Shape, tensor_layout, write_gguf
from copyedit_lsp.decode.llama_model import LlamaModel

# 128 values a row: the Q5_0 and Q8_0 a row that is not a multiple of 256 falls back to; ffn_down's
# 512: Q4_K, and Q6_K in the one layer of two with more bits
TINY = Shape("tiny", hidden=128, ffn=512, layers=2, heads=4, kv_heads=2, vocab=512, tied=True)


@pytest.mark.model
def test_the_random_05b_has_the_shipped_files_tensors(small_model_path):
    shipped = gguf.GGUFReader(str(small_model_path))
    written = [(name, kind, tuple(reversed(dims))) for name, dims, kind in tensor_layout(SHAPES["0.5b"])]
    assert sorted(written) == sorted(
        (t.name, t.tensor_type.name, tuple(int(n) for n in t.shape)) for t in shipped.tensors
    )


def test_a_random_model_runs_in_llama_cpp(tmp_path):
    path = write_gguf(TINY, tmp_path / "tiny.gguf")
    kinds = {t.tensor_type.name for t in gguf.GGUFReader(str(path)).tensors}
    assert kinds == {"F32", "Q5_0", "Q8_0", "Q4_K", "Q6_K"}
    model = LlamaModel(path, n_ctx=256, n_threads=2)
    try:
        assert model.device == "CPU, 2 threads"
        tokens = list(range(3, 40))
        batched = model.eval(tokens, logits_from=0)
        model.truncate(0)
        one_by_one = np.stack([model.eval([token]) for token in tokens])
    finally:
        model.close()
    assert batched.shape == (len(tokens), TINY.vocab) and np.isfinite(batched).all()
    assert np.abs(batched - one_by_one).max() < 0.05 * np.abs(batched).max()


def test_the_transformers_model_cuts_its_cache_back_exactly():
    model = paper_kernel.TorchModel(TINY, "cpu", threads=2)
    tokens = list(range(5, 25))
    model.prefill(tokens[:8])
    batched = model.eval(tokens[8:], logits_from=0)
    model.truncate(8)
    assert model.cache.get_seq_length() == 8
    one_by_one = np.stack([model.eval([token]) for token in tokens[8:]])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-4)


def test_a_run_writes_each_phase_and_a_failing_shape_leaves_the_others(tmp_path, monkeypatch):
    monkeypatch.setitem(paper_kernel.SHAPES, "tiny", TINY)
    arguments = ["--shapes", "tiny", "--spans", "2,8", "--prefix", "16", "--trials", "1", "--threads", "2"]
    assert paper_kernel.main(["--out", str(tmp_path), *arguments]) == 0
    for phase in paper_kernel.PHASES:
        (result,) = json.loads((tmp_path / f"{phase}.json").read_text())
        assert [row["span"] for row in result["rows"]] == [2, 8]
        assert all(row["speedup"] > 0 for row in result["rows"])
        assert "| tiny |" in (tmp_path / f"{phase}.md").read_text()
        assert (tmp_path / f"{phase}.png").stat().st_size > 0
        manifest = json.loads((tmp_path / f"{phase}.manifest.json").read_text())
        assert "--shapes tiny" in manifest["command"] and manifest["machine"]["cores"]
    # no CUDA here: the transformers phase fails and says why, the llama.cpp phase still runs
    assert paper_kernel.main(["--out", str(tmp_path / "cuda"), *arguments, "--device", "cuda"]) == 1
    (failed,) = json.loads((tmp_path / "cuda" / "transformers.json").read_text())
    assert "error" in failed and "failed:" in (tmp_path / "cuda" / "transformers.md").read_text()
    (ran,) = json.loads((tmp_path / "cuda" / "llama-cpp.json").read_text())
    assert len(ran["rows"]) == 2
