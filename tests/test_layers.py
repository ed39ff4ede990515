"""The layers of docs/ARCHITECTURE.md are import contracts: `make lint` fails on an import that
breaks them (no model)."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_tree_keeps_its_layers_and_a_planted_import_breaks_them(tmp_path):
    shutil.copytree(ROOT / "copyedit_lsp", tmp_path / "copyedit_lsp", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    kept = lint_imports(tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    config = tmp_path / "copyedit_lsp" / "config.py"
    config.write_text(
        config.read_text() + "\nfrom .decoder import Decoder  # a server module reaching past the engine\n"
    )
    broken = lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "copyedit_lsp.config -> copyedit_lsp.decoder" in broken.stdout, broken.stdout
