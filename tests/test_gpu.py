"""The decoder on a GPU (``make test-gpu``: llama.cpp built with CUDA; ``make test`` leaves these out,
CI has no GPU): with every layer offloaded the model says so, and it writes the programs and texts it
writes on the CPU, but where the two part at a near tie (a GPU's kernels round differently)."""

import pytest
from mechanism import MODEL
from test_decoder import near_tie

from copyedit_lsp.common.datasets import load_items
from copyedit_lsp.decode.decoder import Decoder
from copyedit_lsp.decode.edit import EditOptions

pytestmark = [pytest.mark.gpu, pytest.mark.model]


@pytest.fixture(scope="module")
def decoders(small_model_path):
    from llama_cpp import llama_supports_gpu_offload

    if not llama_supports_gpu_offload():
        pytest.skip("this llama.cpp has no GPU backend (make test-gpu builds one)")
    gpu = Decoder.load(MODEL, n_gpu_layers=-1, n_threads=2)
    cpu = Decoder.load(MODEL, n_gpu_layers=0, n_threads=2)
    yield gpu, cpu
    gpu.close()
    cpu.close()


def test_the_model_says_it_runs_on_the_gpu(decoders):
    gpu, cpu = decoders
    assert " on GPU " in gpu.device and "25 of 25 layers" in gpu.device, gpu.device
    assert " on CPU, 2 threads" in cpu.device, cpu.device


@pytest.mark.timeout(900)
def test_the_gpu_writes_the_cpus_programs(decoders):
    gpu, cpu = decoders
    options = EditOptions(language="python", fallback=False)  # the programs themselves are compared
    same = 0
    for item in load_items("humanevalfix-python", limit=8):
        on_gpu = gpu.edit(item.before, item.instruction, options)
        on_cpu = cpu.edit(item.before, item.instruction, options)
        if on_gpu.tokens == on_cpu.tokens:
            assert (on_gpu.program, on_gpu.text) == (on_cpu.program, on_cpu.text), item.id
            same += 1
        else:
            near_tie(cpu, cpu.prompt(item.before, item.instruction, options), on_cpu.tokens, on_gpu.tokens)
    assert same >= 4
