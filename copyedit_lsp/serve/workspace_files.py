"""The files a workspace refactor may edit: inside the workspace folders only, text, UTF-8."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from ..core.languages import SOURCE_PATTERNS

SKIPPED_FOLDERS = {
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    ".venv",
    "venv",
    "__pycache__",
    ".mypy_cache",
    ".tox",
    "dist",
    "build",
}


@dataclass(frozen=True)
class WorkspaceFile:
    path: Path  # resolved, inside a workspace folder
    relative: str  # for messages and change annotations
    text: str


def _matches(relative: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """Whether the workspace-relative path matches a glob of ``patterns`` (``**/`` also matches no
    folder, as in VS Code's globs: ``**/*`` matches top-level files) or its file name does."""
    name = relative.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(name, p) for p in _with_empty_folders(patterns))


def _with_empty_folders(patterns: tuple[str, ...] | list[str]) -> set[str]:
    """``patterns`` and each with one or more of its ``**/`` dropped."""
    out: set[str] = set()
    todo = list(patterns)
    while todo:
        pattern = todo.pop()
        if pattern not in out:
            out.add(pattern)
            todo += [pattern[:i] + pattern[i + 3 :] for i in range(len(pattern)) if pattern.startswith("**/", i)]
    return out


def workspace_files(
    roots: list[Path], include: list[str] | None, max_files: int, *, max_bytes: int
) -> tuple[list[WorkspaceFile], list[tuple[str, str]]]:
    """The readable text files under ``roots`` that match ``include``, and those skipped with why.

    Symbolic links are followed only when they stay inside a root; nothing outside is read.
    """
    resolved_roots = [root.resolve() for root in roots]
    files: list[WorkspaceFile] = []
    skipped: list[tuple[str, str]] = []
    seen: set[Path] = set()
    for root in resolved_roots:
        for folder, subfolders, names in os.walk(root, followlinks=False):
            subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_FOLDERS and not d.startswith("."))
            for name in sorted(names):
                path = Path(folder) / name
                relative = path.relative_to(root).as_posix()
                if not _matches(relative, include or SOURCE_PATTERNS):
                    continue
                real = path.resolve()
                if not any(real.is_relative_to(r) for r in resolved_roots):
                    skipped.append((relative, "a link that leads outside the workspace"))
                    continue
                if real in seen or not real.is_file():
                    continue
                seen.add(real)
                if len(files) >= max_files:
                    skipped.append((relative, f"more than maxFiles={max_files} files"))
                    continue
                try:
                    data = real.read_bytes()
                except OSError as error:
                    skipped.append((relative, f"unreadable ({error.strerror})"))
                    continue
                if len(data) > max_bytes:
                    skipped.append((relative, f"larger than {max_bytes} bytes"))
                elif b"\0" in data:
                    skipped.append((relative, "binary"))
                else:
                    try:
                        files.append(WorkspaceFile(real, relative, data.decode("utf-8")))
                    except UnicodeDecodeError:
                        skipped.append((relative, "not UTF-8"))
    return files, skipped
