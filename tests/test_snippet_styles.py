"""The snippet benchmark's cases (modules built from HumanEvalFix's functions, a snippet in each
style assistants write) and structure's placement of them; the model as chooser where structure
leaves a choice."""

import pytest

from copyedit_lsp.bench.changes import score
from copyedit_lsp.bench.snippets import LANGUAGES, STYLES, build_cases, snippets_benchmark
from copyedit_lsp.core.change import ChangeError, read_change
from copyedit_lsp.core.scope import syntax_errors
from copyedit_lsp.core.structure import placements
from copyedit_lsp.decode.completions import Endpoint, RemoteError
from copyedit_lsp.decode.decoder import Decoder
from copyedit_lsp.decode.edit import EditOptions
from copyedit_lsp.decode.fast_apply import apply_change
from copyedit_lsp.decode.llama_model import LlamaModel
from copyedit_lsp.decode.remote import RemoteDecoder
from copyedit_lsp.decode.session import ModelSession

CASES = build_cases(per_style=3, seed=5)


def test_every_style_in_every_language_is_a_real_edit_of_a_module_that_parses():
    assert {(c.language, c.style) for c in CASES} == {(lang, s) for lang in LANGUAGES for s in STYLES}
    for case in CASES:
        assert case.before != case.after and case.snippet.strip(), case.id
        assert not syntax_errors(case.before, case.language) and not syntax_errors(case.after, case.language), case.id


def test_structure_places_the_snippets_exactly_and_never_offers_a_lossy_result():
    result = snippets_benchmark(CASES, modes=["structure"], editors={}, progress=False)
    summary = result["summary"]["structure"]
    assert summary["all"]["exact"] >= 0.95 * len(CASES), summary
    assert summary["all"]["lines_lost"] == summary["all"]["invented"] == 0
    assert all(row["by"] == "structure" for row in result["rows"] if row["applied"])


# A file whose method name two classes define; the snippet's method is unlike either.
TWICE = """class Cart:
    def __init__(self):
        self.items = []

    def total(self):
        return sum(item.price for item in self.items)


class Order:
    def __init__(self, cart):
        self.cart = cart

    def total(self):
        return 0
"""
SNIPPET = "# ...\ndef total(self):\n    return len(self.items)\n"


def test_where_structure_leaves_a_choice_only_the_model_chooses():
    change = read_change(SNIPPET)
    assert len(placements(TWICE, change, "python")) == 2
    with pytest.raises(ChangeError, match="leaves 2 placements: only the model chooses"):
        apply_change(None, TWICE, change, EditOptions(language="python"), shortcut=True)
    remote = RemoteDecoder(Endpoint("http://127.0.0.1:9/v1", model="m", timeout=1.0))
    with pytest.raises(RemoteError, match="does not score"):
        remote.rank(TWICE, change, ["a", "b"])


@pytest.mark.model
def test_the_model_chooses_the_likeliest_placement_in_one_pass_per_candidate(tiny_model_path):
    decoder = Decoder(ModelSession(LlamaModel(tiny_model_path, n_ctx=4096, n_threads=2)))
    change = read_change(SNIPPET)
    texts = [merged.text for merged in placements(TWICE, change, "python")]
    scores = decoder.rank(TWICE, change, texts, EditOptions(language="python"))
    assert len(scores) == 2 and all(score < 0 for score in scores) and scores[0] != scores[1]
    applied = apply_change(decoder, TWICE, change, EditOptions(language="python"), shortcut=True)
    chosen = max(range(2), key=lambda i: scores[i])
    assert applied.complete and applied.result.text == texts[chosen]
    stats = applied.result.stats
    assert (stats.mode, stats.candidates, stats.chosen_tokens) == ("structure", 2, 0)
    assert stats.margin == pytest.approx(abs(scores[0] - scores[1]), rel=1e-3)
    assert score(TWICE, texts[chosen], change, texts[chosen]).lines_lost == 0
    decoder.llama.close()
