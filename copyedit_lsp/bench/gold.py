"""``copyedit bench check-gold``: every item's gold answer (its after text) through the test harness
and through the guard against lost code.

A set whose gold answers fail its tests would count right edits as wrong, so a set is checked before
figures from it are trusted; a guard that refuses gold answers would refuse right edits
(:mod:`~copyedit_lsp.core.loss`). Gold answers whose tests could not run need packages first (the
``[bench]`` extra for Python, ``make bench-npm`` for JavaScript)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

from tqdm import tqdm

from ..common.datasets import EditItem
from ..core.loss import lost_code
from .checks import Outcome, Verdict, run_tests


@dataclass(frozen=True)
class GoldCheck:
    """An edit set's gold answers under its tests and the loss guard: each item's verdict, and what
    the guard says each refused gold answer loses, by id."""

    verdicts: dict[str, Verdict]
    refused: dict[str, str]

    def count(self, outcome: Outcome) -> int:
        """How many gold answers ended in ``outcome``."""
        return sum(verdict.outcome == outcome for verdict in self.verdicts.values())

    @property
    def problems(self) -> dict[str, Verdict]:
        """The items whose gold answer failed or whose tests could not run."""
        return {
            item_id: verdict
            for item_id, verdict in self.verdicts.items()
            if verdict.outcome in (Outcome.FAILED, Outcome.COULD_NOT_RUN)
        }

    def to_json(self) -> dict:
        """Items, a count per outcome, and the problems with their reasons."""
        problems = [{"id": i, "tests": v.outcome, "reason": v.reason} for i, v in self.problems.items()]
        return (
            {"items": len(self.verdicts)}
            | {outcome: self.count(outcome) for outcome in Outcome}
            | {"problems": problems, "refused_by_guard": self.refused}
        )


def check_gold(
    items: Sequence[EditItem], *, timeout: float = 10.0, progress: bool = True, label: str | None = None
) -> GoldCheck:
    """Run every item's after text through its tests (with a progress bar named ``label`` on stderr)
    and through the loss guard, as a result of its before text and instruction."""
    bar = tqdm(items, desc=label, unit="item", disable=not progress, file=sys.stderr)
    verdicts = {item.id: run_tests(item, item.after, timeout=timeout) for item in bar}
    losses = {item.id: lost_code(item.before, item.after, item.language, item.instruction) for item in items}
    return GoldCheck(verdicts, {item_id: loss.describe() for item_id, loss in losses.items() if loss is not None})


def format_report(checks: dict[str, GoldCheck]) -> str:
    """Per set a line of counts, then each item that failed or could not run, with why."""
    lines = []
    for name, check in checks.items():
        counts = [f"{check.count(o)} {o.label}" for o in Outcome if o != Outcome.NO_TESTS or check.count(o)]
        lines.append(f"{name}: {len(check.verdicts)} gold answers: {', '.join(counts)}")
        lines += [f"  {item_id}: {v.outcome.label}: {v.reason}" for item_id, v in check.problems.items()]
        share = len(check.refused) / max(len(check.verdicts), 1)
        lines.append(f"  refused by the loss guard: {len(check.refused)} of {len(check.verdicts)} ({share:.1%})")
        lines += [f"    {item_id}: {why}" for item_id, why in check.refused.items()]
    return "\n".join(lines)
