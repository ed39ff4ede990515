"""``copyedit settings write|check``: the files generated from the server's settings."""

from __future__ import annotations

import argparse
import sys


def cmd_settings(args: argparse.Namespace) -> int:
    """``copyedit settings write|check``: the files generated from ``config.Settings``."""
    from . import settings_files

    if args.action == "check":
        stale = settings_files.stale()
        for name in stale:
            print(f"{name} is stale: run `copyedit settings write`", file=sys.stderr)
        return 1 if stale else 0
    for name in settings_files.write():
        print(f"wrote {name}", file=sys.stderr)
    return 0


def add_commands(commands) -> None:
    """``settings``."""
    settings = commands.add_parser(
        "settings", help="write (or check) the files generated from the server's settings: VS Code's, the READMEs'"
    )
    settings.add_argument("action", choices=["write", "check"])
    settings.set_defaults(func=cmd_settings)
