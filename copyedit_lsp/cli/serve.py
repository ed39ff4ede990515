"""``copyedit serve`` (the OpenAI-compatible apply endpoint) and ``copyedit demo`` (one edit through the
language server)."""

from __future__ import annotations

import argparse

from .arguments import add_model_arguments, server_options, settings


def cmd_serve(args: argparse.Namespace) -> int:
    """``copyedit serve``: the OpenAI-compatible apply endpoint on the model (local or remote), until interrupted."""
    import os

    from ..serve.openai_api import API_KEY_VARIABLE, ServeOptions, serve

    options = ServeOptions(
        host=args.host,
        port=args.port,
        api_key=os.environ.get(API_KEY_VARIABLE) or None,
        max_request_bytes=args.max_request_bytes,
        shortcut=args.shortcut,
    )
    return serve(settings(args), options)


def cmd_demo(args: argparse.Namespace) -> int:
    """``copyedit demo``: one real edit through the real language server (nothing is written)."""
    from .demo import main as demo

    return demo(args.file, args.instruction, args.line, server_options(args), verbose=args.verbose)


def add_commands(commands) -> None:
    """``serve`` and ``demo``."""
    from ..serve.openai_api import API_KEY_VARIABLE, ServeOptions

    serve = commands.add_parser(
        "serve",
        help=f"an OpenAI-compatible apply endpoint (POST /v1/chat/completions, Morph's request form; "
        f"the key, if any, from ${API_KEY_VARIABLE}); writes nothing",
    )
    serve.add_argument("--host", default=ServeOptions.host, help="the address to bind (default: loopback only)")
    serve.add_argument("--port", type=int, default=ServeOptions.port)
    serve.add_argument(
        "--max-request-bytes", type=int, default=ServeOptions.max_request_bytes, help="larger requests get a 413"
    )
    serve.add_argument(
        "--no-shortcut",
        dest="shortcut",
        action="store_false",
        help="run the model even where the anchors or the code's structure place the whole change",
    )
    add_model_arguments(serve, remote="backend")
    serve.set_defaults(func=cmd_serve)

    demo = commands.add_parser("demo", help="one real edit through the real language server (writes nothing)")
    demo.add_argument("file")
    demo.add_argument("--instruction", "-i", required=True)
    demo.add_argument("--line", type=int, default=1, help="the cursor line (1-based): its function is edited")
    demo.add_argument("--verbose", action="store_true", help="print the server's log messages on stderr")
    add_model_arguments(demo, remote="backend")
    demo.set_defaults(func=cmd_demo)
