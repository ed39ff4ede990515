"""``copyedit demo``: one real edit through the real language server, as an editor would run it.

Starts ``copyedit-lsp`` over stdio, opens the file, runs ``copyedit.edit`` at a line, shows the
server's progress, applies the ``workspace/applyEdit`` it receives to an in-memory copy and prints
the program, the diff and the stats (the server's log messages with ``--verbose``).  The file on
disk is never written.
"""

from __future__ import annotations

import asyncio
import difflib
from pathlib import Path

from ..serve.lsp_client import ServerSession
from ..serve.textedits import apply_lsp_edits


async def run_demo(path: Path, instruction: str, line: int, options: dict, verbose: bool = False) -> int:
    text = path.read_text(encoding="utf-8")
    async with ServerSession(options, show_progress=True, verbose=verbose) as session:
        uri = session.open(path, text)
        result = await session.edit(uri, instruction, line)
    edits = [e for _, params in session.applied for change in params.edit.document_changes for e in change.edits]
    edited = apply_lsp_edits(text, edits)
    if result.get("program"):
        print(result["program"].rstrip("\n"))
    diff = difflib.unified_diff(text.splitlines(True), edited.splitlines(True), f"a/{path.name}", f"b/{path.name}")
    print("".join(diff) or "(no change)\n", end="")
    print(f"applied: {result['applied']}; stats: {result.get('stats')}")
    if edits and edited != result.get("text"):
        print("copyedit: the applied edits differ from the server's result")
        return 1
    return 0


def main(path: str, instruction: str, line: int, options: dict, verbose: bool = False) -> int:
    """Run :func:`run_demo` (``line`` is 1-based; ``verbose``: the server's log messages on stderr)."""
    return asyncio.run(run_demo(Path(path), instruction, line - 1, options, verbose))
