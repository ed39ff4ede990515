"""The layers of docs/ARCHITECTURE.md are import contracts: `make lint` fails on an import that
breaks them (no model)."""

import ast
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
    config = tmp_path / "copyedit_lsp" / "serve" / "config.py"
    config.write_text(
        config.read_text() + "\nfrom ..decode.decoder import Decoder  # a server module reaching past the engine\n"
    )
    broken = lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "copyedit_lsp.serve.config -> copyedit_lsp.decode.decoder" in broken.stdout, broken.stdout


JSCPD = ROOT / "lint" / "node_modules" / ".bin" / "jscpd"


def duplicates(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(JSCPD), "--config", str(ROOT / "lint" / ".jscpd.json"), "copyedit_lsp"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_duplicated_block_fails_the_duplicate_check(tmp_path):
    """`make lint`'s jscpd passes the package as it is and fails it with one function copied into
    a second module."""
    shutil.copytree(ROOT / "copyedit_lsp", tmp_path / "copyedit_lsp", ignore=shutil.ignore_patterns("__pycache__"))
    kept = duplicates(tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    source = (tmp_path / "copyedit_lsp" / "core" / "program.py").read_text()
    parse = source[source.index("def parse_program(") : source.index("def _copy_at(")]
    planted = tmp_path / "copyedit_lsp" / "serve" / "textedits.py"
    planted.write_text(planted.read_text() + "\n\n" + parse.replace("parse_program", "parse_again"))
    copied = duplicates(tmp_path)
    assert copied.returncode != 0
    assert "textedits.py" in copied.stdout and "program.py" in copied.stdout, copied.stdout


def test_no_function_in_the_package_reaches_50_lines():
    lengths = {}
    for path in (ROOT / "copyedit_lsp").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lengths[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = node.end_lineno - node.lineno + 1
    longest = max(lengths, key=lengths.__getitem__)
    assert lengths[longest] < 50, f"{longest} has {lengths[longest]} lines"


def test_no_module_in_the_package_passes_600_lines():
    lengths = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines()) for path in ROOT.glob("copyedit_lsp/**/*.py")
    }
    longest = max(lengths, key=lengths.__getitem__)
    assert lengths[longest] <= 600, f"{longest} has {lengths[longest]} lines"


def test_every_module_lives_in_a_layer_folder():
    """The package's root holds only its ``__init__``; each folder says what lives there."""
    assert [path.name for path in (ROOT / "copyedit_lsp").glob("*.py")] == ["__init__.py"]
    for folder in (ROOT / "copyedit_lsp").iterdir():
        if folder.is_dir() and (folder / "__init__.py").is_file():
            assert ast.get_docstring(ast.parse((folder / "__init__.py").read_text())), folder.name
