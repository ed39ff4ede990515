"""A benchmark's manifest says what its figures were measured with (no model is loaded)."""

import json
import subprocess
import sys

from copyedit_lsp.bench.manifest import REPOSITORY, run_manifest, write_manifest
from copyedit_lsp.decode.models import MODELS
from copyedit_lsp.decode.selector import SHIPPED


def test_the_manifest_names_commit_machine_model_and_adapter(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["copyedit", "bench", "edits", "humanevalfix-python", "--limit", "3"])
    manifest = run_manifest(model="qwen2.5-coder-0.5b", selector="default", threads=2)
    head = subprocess.run(["git", "-C", str(REPOSITORY), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert manifest["commit"].removesuffix("-dirty") == head.stdout.strip()
    assert manifest["command"] == "copyedit bench edits humanevalfix-python --limit 3"
    assert manifest["model"]["sha256"] == MODELS["qwen2.5-coder-0.5b"].sha256
    default = next(name for name, shipped in SHIPPED.items() if shipped.model == "qwen2.5-coder-0.5b")
    assert manifest["selector"] == {"name": default, "sha256": SHIPPED[default].sha256}
    assert manifest["machine"]["cores"] >= 1 and manifest["threads"] == 2
    assert "system_info" in manifest["llama_cpp"]
    path = write_manifest(manifest, tmp_path / "runs", "edits")
    assert json.loads(path.read_text()) == manifest and path.name == "edits.manifest.json"


def test_a_run_without_a_selector_or_on_a_remote_engine_names_none():
    assert run_manifest(model="qwen2.5-coder-0.5b", selector="none", threads=None)["selector"] is None
    remote = run_manifest(model="qwen2.5-coder-0.5b", selector="default", threads=None, backend="remote")
    assert remote["selector"] is None and remote["backend"] == "remote"
