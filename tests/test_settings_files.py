"""The settings are written once (config.Settings); VS Code's and the READMEs' follow (no model)."""

import copy
import json
import shutil
from dataclasses import fields

import pytest

from copyedit_lsp.cli import settings_files
from copyedit_lsp.cli.main import main
from copyedit_lsp.serve.config import Settings, updated


def test_the_generated_files_are_current():
    assert settings_files.stale() == [], "run `copyedit settings write`"
    assert main(["settings", "check"]) == 0


@pytest.fixture
def tree(tmp_path):
    for name in (settings_files.PACKAGE, settings_files.TYPES, *settings_files.TABLES):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(settings_files.ROOT / name, tmp_path / name)
    return tmp_path


def test_a_changed_default_or_bound_reaches_every_generated_file(tree):
    changed = [copy.copy(field) for field in fields(Settings)]
    tokens = next(field for field in changed if field.name == "max_new_tokens")
    tokens.default = 4096
    threads = next(field for field in changed if field.name == "n_threads")
    threads.metadata = {**threads.metadata, "schema": {"minimum": 2}}
    assert sorted(settings_files.write(tree, changed)) == sorted(
        [settings_files.PACKAGE, settings_files.TYPES, *settings_files.TABLES]
    )
    package = json.loads((tree / settings_files.PACKAGE).read_text())
    properties = package["contributes"]["configuration"]["properties"]
    assert properties["copyedit.maxNewTokens"]["default"] == 4096
    assert properties["copyedit.threads"]["minimum"] == 2
    assert "copyedit.server.pythonPath" in properties and "copyedit.trace.server" in properties
    assert (
        '{ name: "nThreads", key: "threads", type: "integer", minimum: 2 }' in (tree / settings_files.TYPES).read_text()
    )
    for name in settings_files.TABLES:
        assert "| `maxNewTokens` | `4096` |" in (tree / name).read_text()
    assert settings_files.stale(tree, changed) == []
    assert settings_files.stale(tree) != []  # the files as they are now differ from the real Settings


def test_the_server_checks_choices_and_bounds_from_the_same_fields():
    with pytest.raises(ValueError, match="mode must be one of 'program', 'rewrite', 'lookup'"):
        updated(Settings(), {"mode": "fast"})
    with pytest.raises(ValueError, match="n_gpu_layers must be at least -1"):
        updated(Settings(), {"nGpuLayers": -2})
    with pytest.raises(ValueError, match="copy_check must be at least 0 and less than 1"):
        updated(Settings(), {"copyCheck": 1.0})
    assert updated(Settings(), {"remoteTimeout": 0.5}).remote_timeout == 0.5


def test_a_renamed_setting_is_taken_under_its_old_name_with_a_warning(tree):
    """``adapter`` became ``selector``: the server takes the old key (the new one wins where both
    are given) and warns; VS Code marks the old key deprecated, the extension still reads it, and
    the READMEs list only the new name."""
    warnings: list[str] = []
    assert updated(Settings(), {"adapter": "none"}, warnings.append).selector == "none"
    assert warnings == ["the setting adapter is now selector: rename it (the old name works for now)"]
    assert updated(Settings(), {"copyedit": {"adapter": "none", "selector": "default"}}).selector == "default"
    properties = json.loads((tree / settings_files.PACKAGE).read_text())["contributes"]["configuration"]["properties"]
    assert "copyedit.selector" in properties and "default" not in properties["copyedit.adapter"]
    assert "copyedit.selector" in properties["copyedit.adapter"]["markdownDeprecationMessage"]
    assert 'key: "selector", type: "string", was: "adapter" }' in (tree / settings_files.TYPES).read_text()
    for name in settings_files.TABLES:
        assert "| `selector` |" in (tree / name).read_text() and "| `adapter` |" not in (tree / name).read_text()
