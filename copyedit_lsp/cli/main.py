"""The ``copyedit`` command line: edits and applies, the endpoint and the demo, models, benchmarks,
training and the generated settings files; each group's commands and arguments in its own module."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence

from .. import __version__
from . import apply, bench, model, serve, settings, train

GROUPS = (apply, serve, model, bench, train, settings)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="copyedit", description=__doc__)
    parser.add_argument("--version", action="version", version=f"copyedit {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``copyedit``."""
    args = build_parser().parse_args(argv)
    args.command_line = shlex.join(["copyedit", *(sys.argv[1:] if argv is None else argv)])
    from ..decode.edit import DecodeError
    from ..decode.llama_model import LlamaModelError
    from ..decode.models import ModelError

    try:
        return args.func(args)
    except (ModelError, LlamaModelError, DecodeError, OSError, ValueError) as error:
        print(f"copyedit: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
