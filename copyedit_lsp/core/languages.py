"""The one table of the languages copyedit knows: a file's extension and its LSP languageId."""

from __future__ import annotations

import posixpath

EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascriptreact",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "typescriptreact",
}

# Glob patterns of the files a workspace refactor edits by default.
SOURCE_PATTERNS = tuple(f"*{extension}" for extension in EXTENSIONS)


def language_of_path(path: str) -> str | None:
    """The languageId of ``path``'s extension, or None."""
    return EXTENSIONS.get(posixpath.splitext(path)[1].lower())
