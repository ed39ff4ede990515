"""Batch-invariant evaluation, and with it the decoder's speedups checked token for token.

llama.cpp's CPU kernels round a batch differently from one token (llamafile's sgemm from two rows,
the tiled K-quant matmul from eight), so a draft verified in a batch can flip a near tie. In the
environment ``make exact`` builds (llama.cpp without llamafile) the ``batch_invariant`` option makes
the logits the same bits however tokens are batched; there the speedups must change no token.
"""

import json
import subprocess
from pathlib import Path

import pytest
from mechanism import MODEL

from copyedit_lsp.decode.llama_model import LlamaModel, LlamaModelError

pytestmark = pytest.mark.model
ROOT = Path(__file__).resolve().parent.parent
EXACT_PYTHON = ROOT / ".venv-exact" / "bin" / "python"
SPEEDUP_MODES = "program,program-plain,program-no-force,program-no-batch,program-no-tags,program-no-gens"

LOGITS_BY_SPLIT = """
import json, sys
import numpy as np
from copyedit_lsp.decode.llama_model import LlamaModel

llama = LlamaModel(sys.argv[1], n_ctx=1024, n_threads=2, batch_invariant=True)
tokens = llama.tokenize(open(sys.argv[2]).read())[:240]
prefix, tail = tokens[:200], tokens[200:]

def logits(split):
    llama.truncate(0)
    llama.eval(prefix)
    rows, start = [], 0
    for size in split:
        rows.append(llama.eval(tail[start:start + size], logits_from=0))
        start += size
    return np.concatenate(rows)

one_by_one = logits([1] * len(tail))
splits = {"whole": [len(tail)], "13+27": [13, 27], "3s": [3] * 13 + [1], "30+10": [30, 10]}
print(json.dumps({name: bool(np.array_equal(logits(split), one_by_one)) for name, split in splits.items()}))
"""


TOO_LATE = """
import sys
from copyedit_lsp.decode.llama_model import LlamaModel, LlamaModelError

first = LlamaModel(sys.argv[1], n_ctx=256, n_threads=2)
first.eval(first.tokenize("def f(x):\\n    return [x] * 16\\n"), logits_from=0)  # a batched matmul
first.close()
try:
    LlamaModel(sys.argv[1], n_ctx=256, n_threads=2, batch_invariant=True)
except LlamaModelError as error:
    print(error)
"""


def _run_exact(*args: str, timeout: float) -> str:
    """Run ``.venv-exact``'s Python with ``args`` from the repository; its stdout (it must succeed)."""
    assert EXACT_PYTHON.is_file(), "the batch-invariant environment is missing: run `make exact`"
    run = subprocess.run([str(EXACT_PYTHON), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def test_batch_invariance_is_refused_where_llamafile_is_built_in(small_model_path):
    """The default environment's llama.cpp has llamafile's sgemm: the option fails with the fix named."""
    with pytest.raises(LlamaModelError, match="GGML_LLAMAFILE=OFF"):
        LlamaModel(small_model_path, n_ctx=256, batch_invariant=True)


@pytest.mark.timeout(660)  # a subprocess with its own 600 s limit: 240 tokens evaluated five ways, one by one too
def test_a_tokens_logits_are_the_same_bits_however_the_tokens_are_batched(small_model_path):
    stdout = _run_exact(
        "-c", LOGITS_BY_SPLIT, str(small_model_path), str(ROOT / "copyedit_lsp" / "core" / "resolver.py"), timeout=600
    )
    assert json.loads(stdout.strip().splitlines()[-1]) == {"whole": True, "13+27": True, "3s": True, "30+10": True}


def test_asking_for_batch_invariance_after_a_batched_evaluation_is_refused(small_model_path):
    """llama.cpp reads its matmul switch once per process: the load-time probe catches a late ask."""
    stdout = _run_exact("-c", TOO_LATE, str(small_model_path), timeout=300)
    assert "depend on batching" in stdout and "restart the server" in stdout


@pytest.mark.timeout(1260)  # a subprocess with its own 1200 s limit: three items decoded in seven modes
def test_each_speedup_leaves_program_mode_token_for_token_the_same(small_model_path, tmp_path):
    """The 0.5B on real HumanEvalFix items, with every speedup on, each off, and all off."""
    stdout = _run_exact(
        "-m",
        "copyedit_lsp.cli.main",
        "bench",
        "edits",
        "humanevalfix-python",
        "--limit",
        "3",
        "--model",
        MODEL,
        "--threads",
        "2",
        "--batch-invariant",
        "--selector",
        "none",
        "--modes",
        SPEEDUP_MODES,
        "--out",
        str(tmp_path),
        "--json",
        timeout=1200,
    )
    result = json.loads(stdout)
    assert result["batch_invariant"] is True
    rows = {(row["id"], row["mode"]): row for row in result["sets"]["humanevalfix-python"]["rows"]}
    ids = sorted({item for item, _ in rows})
    assert len(ids) == 3
    for item in ids:
        program = rows[item, "program"]
        for mode in SPEEDUP_MODES.split(",")[1:]:
            assert rows[item, mode]["tokens"] == program["tokens"], (item, mode)
            assert "divergence" not in rows[item, mode]
    # not vacuous: the speedups drafted tokens and saved decode steps on these items
    total = {mode: sum(rows[item, mode]["decode_steps"] for item in ids) for mode in SPEEDUP_MODES.split(",")}
    assert sum(rows[item, "program"]["accepted_tokens"] for item in ids) > 0
    assert all(total["program"] < total[mode] for mode in total if mode != "program"), total
