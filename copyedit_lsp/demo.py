"""``copyedit demo``: one real edit through the real language server, as an editor would run it.

Starts ``copyedit-lsp`` over stdio, opens the file, runs ``copyedit.edit`` at a line, shows the
server's progress, applies the ``workspace/applyEdit`` it receives to an in-memory copy and prints
the edits, a diff and the stats.  The file on disk is never written.
"""

from __future__ import annotations

import asyncio
import difflib
from pathlib import Path

from .lsp_client import ServerSession
from .textedits import apply_lsp_edits


async def run_demo(path: Path, instruction: str, line: int, options: dict) -> int:
    text = path.read_text(encoding="utf-8")
    async with ServerSession(options, show_progress=True) as session:
        uri = session.open(path, text)
        result = await session.edit(uri, instruction, line)
    edits = [e for _, params in session.applied for change in params.edit.document_changes for e in change.edits]
    for edit in edits:
        r = edit.range
        print(f"edit {r.start.line + 1}:{r.start.character}-{r.end.line + 1}:{r.end.character} <- {edit.new_text!r}")
    edited = apply_lsp_edits(text, edits)
    diff = difflib.unified_diff(text.splitlines(True), edited.splitlines(True), f"a/{path.name}", f"b/{path.name}")
    print("".join(diff) or "(no change)")
    print(f"applied: {result['applied']}; stats: {result.get('stats')}")
    if edits and edited != result.get("text"):
        print("copyedit: the applied edits differ from the server's result")
        return 1
    return 0


def main(path: str, instruction: str, line: int, options: dict) -> int:
    """Run :func:`run_demo` (``line`` is 1-based)."""
    return asyncio.run(run_demo(Path(path), instruction, line - 1, options))
