"""The language server for tests that act at a known step of an edit: each edit's first progress
report waits until the file named by the first argument exists (and removes it), so a test acts
between two steps of the model instead of racing it. Never held for more than 120 s."""

import contextlib
import os
import sys
import time

from copyedit_lsp.serve import server
from copyedit_lsp.serve.worker import Worker

RELEASE = sys.argv.pop(1)
edit = Worker.edit


def held(on_progress):
    """``on_progress``, waiting after its first report until :data:`RELEASE` exists."""
    waited = False

    def report(progress) -> None:
        nonlocal waited
        on_progress(progress)
        if not waited:
            waited = True
            deadline = time.monotonic() + 120
            while not os.path.exists(RELEASE) and time.monotonic() < deadline:
                time.sleep(0.01)
            with contextlib.suppress(FileNotFoundError):
                os.remove(RELEASE)

    return report


async def held_edit(self, *args, on_progress=None, **kwargs):
    return await edit(self, *args, on_progress=held(on_progress) if on_progress else None, **kwargs)


Worker.edit = held_edit
raise SystemExit(server.main())
