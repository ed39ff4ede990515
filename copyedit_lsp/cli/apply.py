"""``copyedit apply``: an edit by instruction, or a change merged, printed (written with ``--write``)."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from .arguments import add_model_arguments, open_editor, read_text


def _line_range(text: str) -> tuple[int, int]:
    start, _, end = text.partition("-")
    try:
        first, last = int(start), int(end or start)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A-B (1-based line numbers), not {text!r}") from None
    if not 1 <= first <= last:
        raise argparse.ArgumentTypeError(f"expected 1 <= A <= B, not {text!r}")
    return first, last


def cmd_apply(args: argparse.Namespace) -> int:
    """``copyedit apply``: edit a file with the model by an instruction, or merge a change into it
    (``--change``); print the program, a diff and the stats."""

    from tqdm import tqdm

    from ..core.languages import language_of_path
    from ..core.resolver import split_lines
    from ..decode.edit import EditOptions, EditProgress
    from ..decode.refusal import check

    if args.change is not None:
        return _apply_change(args)
    if args.instruction is None:
        print("copyedit: apply needs --instruction (an edit) or --change (a change to merge)", file=sys.stderr)
        return 2
    path = Path(args.file)
    text = read_text(args.file, "file")
    if text is None:
        return 2
    lines = split_lines(text)
    language = language_of_path(path.name) or ""
    if _outside(args.lines, len(lines)):
        return 2
    editor = open_editor(args, mode=args.mode, splice=args.splice)
    first, last = _edited_lines(args, editor, text, language, len(lines))
    head, region, tail = "".join(lines[: first - 1]), "".join(lines[first - 1 : last]), "".join(lines[last:])
    with tqdm(desc=f"{args.mode} edit", unit=" steps", file=sys.stderr, disable=args.json) as bar:

        def progress(update: EditProgress) -> None:
            bar.set_postfix(ops=update.stats.ops, copied=update.stats.spliced_tokens, refresh=False)
            bar.update(update.stats.chosen_tokens - bar.n)

        options = EditOptions(
            mode=args.mode, splice=args.splice, language=language, copy_check=args.copy_check, fallback=args.fallback
        )
        result = editor.edit(region, args.instruction, options, on_progress=progress)
        progress(EditProgress(result.stats))
    edited = head + result.text + tail
    _print_edit(path.name, text, edited, result, as_json=args.json)
    if refused := _refused(
        args, check(text, edited, result, language, syntax_guard=args.syntax_guard, taken=_taken(args))
    ):
        return refused
    if args.write:
        path.write_text(edited, encoding="utf-8", newline="")
    return 0


def _apply_change(args: argparse.Namespace) -> int:
    """``copyedit apply --change``: the change merged by the model's apply program; refused (exit
    5) where a part of it shows nowhere in the result, unless ``--partial``."""

    from ..core.change import ChangeError, read_change
    from ..core.languages import language_of_path
    from ..decode.edit import EditOptions
    from ..decode.fast_apply import ModelNeeded, apply_change

    text, given = read_text(args.file, "file"), read_text(args.change, "change")
    if text is None or given is None:
        return 2
    try:
        change = read_change(given, args.change_form)
    except ChangeError as error:
        print(f"copyedit: {error}; nothing was changed", file=sys.stderr)
        return 2
    language = language_of_path(args.file) or ""
    options = EditOptions(mode=args.mode, splice=args.splice, language=language, fallback=args.fallback)
    applied = None
    try:
        if args.shortcut:  # what the anchors or the structure place alone, before the model loads
            with contextlib.suppress(ModelNeeded):
                applied = apply_change(None, text, change, options, instruction=args.instruction or "",
                                       partial=args.partial, shortcut=True)  # fmt: skip
        if applied is None:
            editor = open_editor(args, mode=args.mode, splice=args.splice)
            applied = apply_change(editor, text, change, options, instruction=args.instruction or "",
                                   partial=args.partial, shortcut=args.shortcut)  # fmt: skip
    except ChangeError as error:
        print(f"copyedit: {error}; nothing was changed", file=sys.stderr)
        return 2
    result = applied.result
    _print_edit(Path(args.file).name, text, result.text, result, as_json=args.json, unplaced=applied.unplaced)
    for part in applied.unplaced:
        print(f"copyedit: not placed: {part}", file=sys.stderr)
    if refused := _refused(args, applied.refusal(syntax_guard=args.syntax_guard, taken=_taken(args))):
        return refused
    if args.write:
        Path(args.file).write_text(result.text, encoding="utf-8", newline="")
    return 0


# What ``copyedit apply`` adds to a refusal of each kind it can be told to take.
_TAKES = {
    "cut_short": ("allow_incomplete", " (--allow-incomplete takes it as it is)"),
    "not_placed": ("partial", " (--partial takes the rest)"),
    "code_lost": ("allow_loss", " (--allow-loss takes it)"),
}


def _taken(args: argparse.Namespace) -> frozenset[str]:
    """The refusal kinds the arguments take (``--allow-incomplete``, ``--partial``, ``--allow-loss``)."""
    return frozenset(kind for kind, (flag, _) in _TAKES.items() if vars(args)[flag])


def _refused(args: argparse.Namespace, refusal) -> int:
    """The exit status of a result not to be written (:class:`~copyedit_lsp.decode.refusal.Refusal`),
    said on stderr; 0 for none."""
    if refusal is None:
        return 0
    hint = _TAKES.get(refusal.kind, ("", ""))[1]
    print(f"copyedit: {refusal.message}; nothing was written{hint}", file=sys.stderr)
    return refusal.exit_status


def _outside(asked: tuple[int, int] | None, n_lines: int) -> bool:
    """Whether ``--lines`` reaches past the file's ``n_lines`` lines (said on stderr)."""
    if asked is None or asked[1] <= max(n_lines, 1):
        return False
    print(f"copyedit: --lines {asked[0]}-{asked[1]} is outside the file's {n_lines} lines", file=sys.stderr)
    return True


def _edited_lines(args: argparse.Namespace, editor, text: str, language: str, n_lines: int) -> tuple[int, int]:
    """The 1-based lines ``copyedit apply`` edits of ``text`` (``n_lines`` lines): ``--lines``, the
    whole file, or what the instruction names."""
    from ..serve.region import choice_names, narrowed_scope

    if args.lines is not None:
        return args.lines
    if args.whole_file:
        return 1, max(n_lines, 1)
    # what the instruction is about (where it names nothing in a long file, as the model says)
    names = choice_names(text, language, args.instruction)
    chosen = editor.choose(text, args.instruction, language, names) if names else None
    scope = narrowed_scope(text, language, args.instruction, chosen)
    first, last = scope.start_line + 1, max(scope.end_line, 1)
    if scope.kind != "document":
        print(
            f"copyedit: editing {scope.kind} {scope.name} (lines {first}-{last}; --whole-file edits it all)",
            file=sys.stderr,
        )
    return first, last


def _print_edit(name: str, text: str, edited: str, result, *, as_json: bool, unplaced: Sequence[str] = ()) -> None:
    """The program, the diff of ``text`` into ``edited`` and the stats (and an apply's parts not
    placed), as JSON or plain text."""

    diff = "".join(difflib.unified_diff(text.splitlines(True), edited.splitlines(True), f"a/{name}", f"b/{name}"))
    program = result.program.to_text() if result.program is not None else None
    if as_json:
        loss = result.loss.to_dict() if result.loss is not None else None
        answer = {"program": program, "diff": diff, "text": edited, "cut": result.cut, "loss": loss}
        answer |= {"unplaced": list(unplaced), "stats": result.stats.to_dict()}
        print(json.dumps(answer, indent=2))
        return
    if program is not None:
        print(program, end="\n\n")
    print(diff or "(no change)")
    print("\n".join(f"{key}: {value}" for key, value in result.stats.to_dict().items()))


def _add_change_arguments(apply: argparse.ArgumentParser) -> None:
    """``apply``'s arguments for a change to merge."""
    from ..core.change import FORMS

    apply.add_argument(
        "--change",
        help="a change to merge: a snippet with elision markers, search/replace blocks, a diff or a whole file "
        "(- reads stdin)",
    )
    apply.add_argument("--change-form", choices=FORMS, help="the change's form (default: told from its text)")
    apply.add_argument(
        "--partial", action="store_true", help="with --change: apply what could be placed, name the rest (exit 0)"
    )
    apply.add_argument(
        "--no-shortcut",
        dest="shortcut",
        action="store_false",
        help="with --change: run the model even where the anchors or the code's structure place the whole change",
    )


def add_commands(commands) -> None:
    """``apply``."""
    from ..decode.edit import COPY_CHECK
    from ..serve.config import CHOICES

    apply = commands.add_parser(
        "apply", help="edit a file with the model, or merge a change into it (prints; writes only with --write)"
    )
    apply.add_argument("file")
    apply.add_argument("--instruction", "-i", help="what to change (with --change: what the change is for)")
    _add_change_arguments(apply)
    apply.add_argument(
        "--lines",
        type=_line_range,
        help="edit only lines A-B (1-based, inclusive); default: the definitions the instruction names",
    )
    apply.add_argument(
        "--whole-file", action="store_true", help="edit the whole file, not only the definitions the instruction names"
    )
    apply.add_argument("--mode", choices=CHOICES["mode"], default="program")
    apply.add_argument("--splice", choices=CHOICES["splice"], default="prefill")
    apply.add_argument(
        "--copy-check",
        type=float,
        default=COPY_CHECK,
        help="program mode: a copied token less probable than this under the model (and not its first "
        f"choice) ends the copy before its line, and the model rewrites it (0 turns it off; default {COPY_CHECK})",
    )
    apply.add_argument(
        "--no-fallback",
        dest="fallback",
        action="store_false",
        help="program mode: keep the program's text even where it was cut short or parses worse than the "
        "original (by default the edit is then decoded again as a rewrite by the base model)",
    )
    add_model_arguments(apply, remote="backend")
    _add_result_arguments(apply)
    apply.set_defaults(func=cmd_apply)


def _add_result_arguments(apply: argparse.ArgumentParser) -> None:
    """``apply``'s arguments for what is done with the result."""
    apply.add_argument("--json", action="store_true", help="print JSON")
    apply.add_argument("--write", action="store_true", help="write the edited file")
    apply.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="exit 0 and write (with --write) even when the model's output was cut short",
    )
    apply.add_argument(
        "--allow-loss",
        action="store_true",
        help="exit 0 and write (with --write) even when the edit drops code the instruction did not ask to drop",
    )
    apply.add_argument(
        "--no-syntax-guard",
        dest="syntax_guard",
        action="store_false",
        help="take a result that parses worse than the file (the server's syntaxGuard false)",
    )
