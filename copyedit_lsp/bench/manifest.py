"""The manifest a benchmark writes beside its outputs: what it was measured with and by which
command, so that every figure says where it came from (``NAME.manifest.json``)."""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from ..decode.models import MODELS, ModelError, resolve_model, sha256_file
from ..decode.selector import resolve_selector

REPOSITORY = Path(__file__).resolve().parents[2]
CPU_FLAGS = ("avx", "avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16", "f16c", "fma")


def run_manifest(
    *, model: str | None, selector: str | None, threads: int | None, backend: str = "local", task: str = "edit"
) -> dict:
    """The manifest of a run started by this process's command line: commit, date, machine, the
    llama.cpp build, threads, the model and the span selector by sha256 (None where a run has none;
    a ``backend`` without "local" loads no selector)."""
    return {
        "command": shlex.join(["copyedit", *sys.argv[1:]]),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),  # noqa: UP017 (a GPU machine's Python 3.10)
        "commit": commit(),
        "machine": machine(),
        "llama_cpp": llama_cpp_build(),
        "threads": threads,
        "backend": backend,
        "model": _model(model) if model else None,
        "selector": _selector(selector, model, task) if selector and model and "local" in backend else None,
    }


def write_manifest(manifest: dict, out_dir: Path, name: str) -> Path:
    """``manifest`` as ``out_dir/name.manifest.json``; returns the path."""
    path = Path(out_dir) / f"{name}.manifest.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return path


def commit() -> str | None:
    """The checkout's commit, with ``-dirty`` if tracked files differ from it (None outside git)."""
    try:
        head = _git("rev-parse", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def machine() -> dict:
    """The CPU's model name, core count and the vector flags that decide llama.cpp's kernels."""
    name, flags = platform.processor(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                name = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    except OSError:
        pass
    return {"cpu": name, "cores": os.cpu_count(), "flags": [flag for flag in CPU_FLAGS if flag in flags]}


def llama_cpp_build() -> dict | None:
    """llama-cpp-python's version and llama.cpp's system info (None where it is not installed)."""
    try:
        import llama_cpp
    except ImportError:
        return None
    return {"version": llama_cpp.__version__, "system_info": llama_cpp.llama_print_system_info().decode().strip()}


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPOSITORY), *args], capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()


def _model(model: str) -> dict:
    """A known model by its recorded sha256, a file by the sha256 of its bytes."""
    if model in MODELS:
        return {"name": model, "sha256": MODELS[model].sha256}
    try:
        path = resolve_model(model)
    except ModelError:
        return {"name": model, "sha256": None}
    return {"name": model, "sha256": sha256_file(path)}


def _selector(setting: str, model: str, task: str) -> dict | None:
    """The span selector of ``task`` the setting gives ``model``, by name and sha256."""
    selector = resolve_selector(setting, model if model in MODELS else "", task)
    if selector is None:
        return None
    return {"name": selector.name, "sha256": selector.sha256 or sha256_file(selector.path)}
