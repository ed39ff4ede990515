"""One apply pipeline: ``copyedit apply --change``, the language server's ``copyedit.apply`` (a
real client over stdio) and ``copyedit serve`` (the ``openai`` client) give the same bytes, or
the same typed refusal, for a sample of the snippet benchmark and for changes they refuse."""

from __future__ import annotations

import json
import subprocess

import openai
import pytest
import pytest_lsp
from mechanism import ARGUMENTS
from pytest_lsp import LanguageClient
from test_openai_api import COPYEDIT, KEY, apply_message, serving
from test_server import SERVER, open_document, run_apply, start

from copyedit_lsp.bench.snippets import build_cases
from copyedit_lsp.decode.refusal import KINDS
from copyedit_lsp.serve.openai_api import API_KEY_VARIABLE

pytestmark = [pytest.mark.model, pytest.mark.server]

EXTENSIONS = {"python": "py", "javascript": "js", "typescript": "ts"}
SAMPLE = {c.id: c for c in build_cases(per_style=1, seed=7)}
STOCK = "def total(items):\n    return sum(items)\n\n\ndef mean(items):\n    return total(items) / len(items)\n"
SAME = "<<<<<<< SEARCH\n    return sum(items)\n=======\n    return sum(items)\n>>>>>>> REPLACE\n"
NOWHERE = "<<<<<<< SEARCH\n    return max(items)\n=======\n    return min(items)\n>>>>>>> REPLACE\n"
# id -> (language, the file, the change, what every front end answers: the text, or a refusal code)
CASES = {
    case_id: (case.language, case.before, case.snippet, case.after)
    for case_id, case in SAMPLE.items()
    if case_id in ("python/class/0", "javascript/deleted/0", "typescript/imports/0", "python/renamed/0")
} | {
    "a change that changes nothing": ("python", STOCK, SAME, "unchanged"),
    "a block that matches nowhere": ("python", STOCK, NOWHERE, "invalid_change"),
}


def cli(tmp_path, language: str, text: str, change: str) -> str:
    """What ``copyedit apply --change`` answers: the text, or the refusal's code from its exit status."""
    path, changed = tmp_path / f"file.{EXTENSIONS[language]}", tmp_path / "change.txt"
    path.write_text(text)
    changed.write_text(change)
    done = subprocess.run(
        [str(COPYEDIT), "apply", str(path), "--change", str(changed), "--json", "--threads", "2", *ARGUMENTS],
        capture_output=True,
        text=True,
    )
    if done.returncode == 0:
        return json.loads(done.stdout)["text"]
    if done.returncode == 2:
        return "invalid_change"
    return next(code for code, (status, _, _) in KINDS.items() if status == done.returncode)


async def lsp(client: LanguageClient, uri: str, language: str, text: str, change: str) -> str:
    open_document(client, uri, text, language)
    try:
        answer = await run_apply(client, {"uri": uri, "change": change})
    except Exception as error:  # InvalidParams: a change it cannot read or place
        assert "nothing was applied" in str(error)
        return "invalid_change"
    return answer["text"] if answer["applied"] else answer["refusal"]


def http(url: str, text: str, change: str) -> str:
    client = openai.OpenAI(base_url=url, api_key=KEY, max_retries=0)
    try:
        answer = client.chat.completions.create(model="copyedit-apply", messages=apply_message(text, change))
    except openai.BadRequestError as error:
        return error.body["code"]
    return answer.choices[0].message.content


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient):
    await start(lsp_client, "visual-studio-code", {"nThreads": 2, "review": "never"})
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_the_command_line_the_server_and_the_endpoint_answer_alike(client, tmp_path):
    assert len(CASES) == 6
    with serving(env={API_KEY_VARIABLE: KEY}) as url:
        for n, (name, (language, text, change, expected)) in enumerate(CASES.items()):
            uri = f"file:///tmp/front_ends_{n}.{EXTENSIONS[language]}"
            answers = {
                "cli": cli(tmp_path, language, text, change),
                "lsp": await lsp(client, uri, language, text, change),
                "http": http(url, text, change),
            }
            assert set(answers.values()) == {expected}, (name, answers)
