"""``copyedit bench lsp``: what the server adds around the model, measured through a real client."""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

from ..common.reports import markdown_table
from ..serve.lsp_client import ServerSession

EDIT_SOURCE = '''def mean(values):
    """Return the arithmetic mean of values."""
    total = 0
    for value in values:
        total += value
    return total / len(values) - 1
'''


def big_python_file(lines: int) -> str:
    """A Python file of exactly ``lines`` lines: functions with bodies and an instruction comment."""
    out = []
    i = 0
    while len(out) < lines:
        out += [f"def function_{i}(value):", "    # copyedit: add a docstring", f"    return value * {i}", "", ""]
        i += 1
    return "\n".join(out[:lines]) + "\n"


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def _peak_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc")


async def _measure(options: dict, lines: int, requests: int, edits: int, seed: int) -> dict:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as folder:
        async with ServerSession(options) as session:
            big = session.open(Path(folder) / "big.py", big_python_file(lines))
            small = session.open(Path(folder) / "small.py", EDIT_SOURCE)
            await session.edit(small, "Fix the bug in mean.", 0)  # waits for the model; not measured
            action_times = []
            for _ in tqdm(range(requests), desc="code actions", file=sys.stderr):
                started = time.perf_counter()
                actions = await session.code_actions(big, rng.randrange(lines))
                action_times.append(time.perf_counter() - started)
                assert actions, "the server listed no code action"
            overheads, decoder = [], []
            for _ in tqdm(range(edits), desc="edits", file=sys.stderr):
                session.applied.clear()
                started = time.perf_counter()
                result = await session.edit(small, "Fix the bug in mean.", 2)
                finished = session.applied[0][0] if session.applied else time.perf_counter()
                decoder.append(result["stats"]["seconds"])
                overheads.append(finished - started - result["stats"]["seconds"])
            peak = _peak_rss_bytes(session.pid)
    return {
        "model": options.get("model"),
        "document_lines": lines,
        "code_action_requests": requests,
        "code_action_p50_ms": 1000 * statistics.median(action_times),
        "code_action_p95_ms": 1000 * _p95(action_times),
        "edits": edits,
        "edit_overhead_p50_ms": 1000 * statistics.median(overheads),
        "edit_overhead_p95_ms": 1000 * _p95(overheads),
        "decoder_p50_s": statistics.median(decoder),
        "server_peak_rss_mb": peak / 2**20,
    }


def lsp_benchmark(options: dict, *, lines: int = 5000, requests: int = 200, edits: int = 10, seed: int = 0) -> dict:
    """Code-action latency on a big file, server overhead per edit, the server's peak memory.

    ``options`` are the server's initializationOptions (model, nThreads, ...).
    """
    return asyncio.run(_measure(options, lines, requests, edits, seed))


def format_table(result: dict) -> str:
    rows = [
        [
            f"code actions, {result['document_lines']:,}-line Python file ({result['code_action_requests']} requests)",
            f"{result['code_action_p50_ms']:.2f} ms",
            f"{result['code_action_p95_ms']:.2f} ms",
            "<= 10 ms",
        ],
        [
            f"server overhead per edit: request to applyEdit minus decoder time ({result['edits']} edits)",
            f"{result['edit_overhead_p50_ms']:.2f} ms",
            f"{result['edit_overhead_p95_ms']:.2f} ms",
            "<= 20 ms",
        ],
        ["server peak memory (VmHWM)", f"{result['server_peak_rss_mb']:.0f} MB", "", "<= 1229 MB"],
    ]
    table = markdown_table(["measure", "p50", "p95", "goal"], rows, right=(1, 2, 3))
    return f"copyedit-lsp with {result['model']}\n\n{table}"
