"""The server over a raw byte stream, as a hostile client would drive it: whatever the bytes, the
server never dies or goes deaf, every request gets its answer within 10 s with the code JSON-RPC
and LSP name, and a message the server refuses changes nothing.

Each class of hostile message is sent to its own server, over stdio and TCP, ``--fuzz-per-class``
messages a class (100 in ``make test``; the full run is
``.venv/bin/python -m pytest tests/test_protocol.py -k fuzz -s --fuzz-per-class 1000``, which prints
a line of figures a class).  No model: the model path does not exist; the soak at the end runs a
real edit with the tests' 0.5B (tests/mechanism.py) while the traffic goes on.
"""

from __future__ import annotations

import collections
import json
import queue
import random
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_lsp
from fixes import fix_problems
from mechanism import SETTINGS

from copyedit_lsp.serve.framing import MAX_DEPTH, Message, MessageFramer
from copyedit_lsp.serve.server import LOG_CHARS

pytestmark = pytest.mark.server  # the real server over stdio and TCP

DOCUMENT = "file:///tmp/fuzz.py"
OTHER = "file:///tmp/other.py"  # opened only by a notification sent with an id: never opened
TEXT = "def area(radius):\n    return 3.14 * radius * 2\n"
OPTIONS = {"model": "/nonexistent/model.gguf"}
ANSWER_WITHIN = 10.0  # seconds a request may wait for its answer
RESULT = "result"  # a Case's expected answer: a result, not an error
ANY = "any"  # a Case's expected answer: anything, as long as one comes


def frame(body: bytes, length: object = None, *, name: bytes = b"Content-Length", line_end: bytes = b"\r\n") -> bytes:
    declared = len(body) if length is None else length
    return name + b": " + str(declared).encode() + line_end + line_end + body


def request(msg_id: object, method: str, params: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()


def notification(method: str, params: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode()


def code_action_params(line: int = 0, uri: str = DOCUMENT) -> dict:
    position = {"line": line, "character": 0}
    return {
        "textDocument": {"uri": uri},
        "range": {"start": position, "end": position},
        "context": {"diagnostics": []},
    }


class Server:
    """The language server as a subprocess over stdio or TCP: its answers collected by id (those
    with a null id apart), its own requests answered (applyEdit: applied)."""

    def __init__(self, transport: str = "stdio", options: list[str] = ()) -> None:
        command = [sys.executable, "-m", "copyedit_lsp.serve.server", *options]
        if transport == "tcp":
            with socket.socket() as probe:  # a free port
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            command += ["--tcp", f"127.0.0.1:{port}"]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.socket = _connect(port, self.process) if transport == "tcp" else None
        self.answers: dict[object, list[dict]] = collections.defaultdict(list)
        self.nulls: list[dict] = []  # errors answered with a null id
        self.arrived: queue.Queue[dict] = queue.Queue()
        self.stderr = bytearray()
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _chunk(self) -> bytes:
        return self.socket.recv(1 << 16) if self.socket else self.process.stdout.read1(1 << 16)

    def _read(self) -> None:
        framer = MessageFramer()
        while chunk := self._chunk():
            framer.feed(chunk)
            for item in framer.messages():
                assert isinstance(item, Message), item  # the server's own framing is exact
                message = item.data
                if "method" in message and "id" in message:  # the server's request
                    result = {"applied": True} if message["method"] == "workspace/applyEdit" else None
                    self.send(frame(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()))
                elif "id" in message and message["id"] is None:
                    self.nulls.append(message)
                elif "id" in message:
                    self.answers[message["id"]].append(message)
                self.arrived.put(message)

    def _drain(self) -> None:
        while chunk := self.process.stderr.read1(1 << 16):
            self.stderr += chunk

    def send(self, data: bytes) -> None:
        with self.lock:
            if self.socket:
                self.socket.sendall(data)
            else:
                self.process.stdin.write(data)
                self.process.stdin.flush()

    def wait_for(self, msg_id: object, timeout: float = 20.0) -> dict:
        deadline = time.monotonic() + timeout
        while not self.answers.get(msg_id):
            assert self.process.poll() is None, f"the server exited: {bytes(self.stderr[-2000:])!r}"
            assert time.monotonic() < deadline, f"no answer to request {str(msg_id)[:80]} within {timeout} s"
            time.sleep(0.01)
        return self.answers[msg_id][0]

    def rss(self, field: str = "VmRSS") -> int:
        """The server's resident memory in bytes (VmHWM: its peak so far)."""
        for line in open(f"/proc/{self.process.pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise AssertionError(f"no {field}")

    def close(self) -> None:
        if self.socket:
            self.socket.close()
        self.process.kill()
        self.process.wait()


def _connect(port: int, process: subprocess.Popen) -> socket.socket:
    """A connection to the server once it listens."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port))
        except ConnectionRefusedError:
            assert process.poll() is None and time.monotonic() < deadline, "the server did not listen"
            time.sleep(0.05)


@pytest.fixture(params=["stdio", "tcp"])
def server(request):
    server = Server(request.param)
    yield server
    server.close()


def initialize(server: Server) -> None:
    server.send(frame(request(0, "initialize", {"capabilities": {}, "initializationOptions": OPTIONS})))
    assert "result" in server.wait_for(0)
    server.send(frame(notification("initialized", {})))
    item = {"uri": DOCUMENT, "languageId": "python", "version": 1, "text": TEXT}
    server.send(frame(notification("textDocument/didOpen", {"textDocument": item})))


def check_alive_and_unchanged(server: Server, msg_id: int) -> None:
    """The server answers a code action on the document, which is open, at version 1, with its text."""
    server.send(frame(request(msg_id, "textDocument/codeAction", code_action_params(0))))
    actions = server.wait_for(msg_id, ANSWER_WITHIN)["result"]
    free = [a for a in actions if a["title"] == "Edit with instruction..."]
    assert free and free[0]["command"]["arguments"][0]["version"] == 1, actions


def test_lifecycle_misuse_gets_the_errors_lsp_names(server):
    server.send(frame(request(1, "textDocument/codeAction", code_action_params())))
    assert server.wait_for(1)["error"]["code"] == -32002  # before initialize
    initialize(server)
    server.send(frame(request(2, "initialize", {"capabilities": {}})))
    assert server.wait_for(2)["error"]["code"] == -32600  # a second initialize
    server.send(frame(request(3, "textDocument/codeAction", code_action_params())))
    assert isinstance(server.wait_for(3)["result"], list)
    server.send(frame(request(4, "shutdown", None)))
    assert server.wait_for(4).get("result") is None and "error" not in server.answers[4][0]
    server.send(frame(request(5, "textDocument/codeAction", code_action_params())))
    assert server.wait_for(5)["error"]["code"] == -32600  # after shutdown


@dataclass(frozen=True)
class Case:
    """One hostile message: its bytes; the id of the request it makes (None: nothing to await);
    the answer that id must get (RESULT, ANY or an error code); the code of the answer with a
    null id it must draw (parse errors, invalid requests whose id cannot be read), or None."""

    data: bytes
    msg_id: object = None
    expect: object = None
    null_code: int | None = None


# Requests whose params fail the schema, and the field the error must name.
BAD_PARAMS = [
    ("textDocument/codeAction", {**code_action_params(), "range": {"start": {"line": "x", "character": 0}}}, "line"),
    (
        "textDocument/codeAction",
        {"range": code_action_params()["range"], "context": {"diagnostics": []}},
        "textDocument",
    ),
    ("workspace/executeCommand", {"arguments": []}, "command"),
    ("textDocument/codeAction", "not an object", "params"),
]


def good(msg_id: object, rng: random.Random) -> bytes:
    return request(msg_id, "textDocument/codeAction", code_action_params(rng.randrange(0, 3)))


def framing_case(rng: random.Random, msg_id: int) -> Case:
    """A good request framed badly: a length off by a few bytes, or not a length, a lower-case
    header, LF line ends: read all the same."""
    body = good(msg_id, rng)
    kind = rng.randrange(4)
    if kind == 0:
        data = frame(body, len(body) + rng.choice([-1, 1, 2]))
    elif kind == 1:
        data = frame(body, rng.choice([0, -1, "abc", "", 10**12, 10**20]))
    elif kind == 2:
        data = frame(body, name=b"content-length")
    else:
        data = frame(body, line_end=b"\n")
    return Case(data, msg_id, RESULT)


def garbage_case(rng: random.Random, msg_id: int) -> Case:
    """Bytes no header frames, a framed body cut short, a body with bytes flipped."""
    body = good(msg_id, rng)
    kind = rng.randrange(4)
    if kind == 0:
        return Case(body + b"\r\n")  # a body without a header: dropped
    if kind == 1:
        return Case(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))) + b"\r\n")
    if kind == 2:
        return Case(frame(body[: rng.randrange(1, len(body) - 1)]), null_code=-32700)  # truncated JSON
    mutated = bytearray(body)
    for _ in range(rng.randrange(1, 4)):
        mutated[rng.randrange(len(mutated))] = rng.randrange(256)
    return Case(frame(bytes(mutated)))  # answered or not, as the bytes still parse


def bad_params_case(rng: random.Random, msg_id: int) -> Case:
    method, params, field = rng.choice(BAD_PARAMS)
    return Case(frame(request(msg_id, method, params)), msg_id, (-32602, field))


def unknown_method_case(rng: random.Random, msg_id: int) -> Case:
    return Case(frame(request(msg_id, f"$/unknown/{'x' * rng.randrange(1, 2000)}", {})), msg_id, -32601)


def deep_case(rng: random.Random, msg_id: int) -> Case:
    """Arrays and objects nested 10 to 1,000,000 levels: in a command's arguments (answered as
    usual up to the bound, refused with -32602 past it), beside the params, or as the whole message."""
    levels = rng.choice([int(10 ** rng.uniform(1, 6)), MAX_DEPTH - 4, MAX_DEPTH - 3, MAX_DEPTH - 2])
    opens, closes = ("[" * levels, "]" * levels) if rng.random() < 0.5 else ('{"a":' * levels + "1", "}" * levels)
    nested = opens + closes
    where = rng.randrange(3)
    if where == 0:  # message, params, arguments: three levels around it
        arguments = '{"command": "copyedit.cancel", "arguments": [' + nested + "]}"
        body = f'{{"jsonrpc": "2.0", "id": {msg_id}, "method": "workspace/executeCommand", "params": {arguments}}}'
        return Case(frame(body.encode()), msg_id, RESULT if 3 + levels <= MAX_DEPTH else (-32602, "nested"))
    if where == 1:  # a member beside the params: one level around it
        body = (
            request(msg_id, "textDocument/codeAction", code_action_params())[:-1] + b', "x": ' + nested.encode() + b"}"
        )
        return Case(frame(body), msg_id, RESULT if 1 + levels <= MAX_DEPTH else (-32602, "nested"))
    return Case(frame(nested.encode()), null_code=-32600)  # not a request object, however deep


def long_case(rng: random.Random, msg_id: object) -> Case:
    """Very long strings and keys: an unknown member with a long name or value, a long string id."""
    size = int(10 ** rng.uniform(3, 6))
    kind = rng.randrange(3)
    if kind == 0:
        params = code_action_params() | {"x" * size: 1}
    elif kind == 1:
        params = code_action_params() | {"context": {"diagnostics": [], "note": "é" * size}}
    else:
        params, msg_id = code_action_params(), f"{msg_id}-" + "é" * size
    return Case(frame(request(msg_id, "textDocument/codeAction", params)), msg_id, RESULT)


def hostile_id_case(rng: random.Random, msg_id: int) -> Case:
    """Ids a client should not send: huge or negative integers and odd strings are legal and echoed;
    floats, objects, arrays, booleans and null are not, and get -32600 with a null id."""
    legal = [10 ** rng.randrange(10, 300) + msg_id, -msg_id, f"\u2603{msg_id}\n\t\"'", f"{msg_id}" + " " * 100]
    illegal = [msg_id + 0.5, float(msg_id), {"id": msg_id}, [msg_id], True, False, None]
    if rng.random() < 0.5:
        hostile = rng.choice(legal)
        return Case(frame(good(hostile, rng)), hostile, RESULT)
    return Case(frame(good(rng.choice(illegal), rng)), null_code=-32600)


def encoding_case(rng: random.Random, msg_id: int) -> Case:
    """Bodies that are not UTF-8 JSON text: bytes invalid in UTF-8 (overlong forms, encoded
    surrogates, stray continuation bytes) inside a string, a lone surrogate escape, UTF-16, a BOM."""
    body = good(msg_id, rng)
    kind = rng.randrange(4)
    if kind == 0:
        bad = rng.choice([b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xff", b"\x80", b"\xf8\x88\x80\x80\x80"])
        data = body.replace(b'"uri": "file:///tmp/', b'"uri": "file:///tmp/' + bad)
    elif kind == 1:
        data = body.replace(b"fuzz.py", rng.choice([b"fuzz\\ud800.py", b"fuzz\\udfff.py", b"\\udc80"]))
    elif kind == 2:
        data = body.decode().encode(rng.choice(["utf-16", "utf-16-le", "utf-32"]))
    else:
        data = b"\xef\xbb\xbf" + body
    return Case(frame(data), null_code=-32700)


def notification_id_case(rng: random.Random, msg_id: int) -> Case:
    """Notifications sent with an id (-32601, not applied) and requests sent without one (nothing
    to answer; not run: a shutdown without an id does not shut the server down)."""
    item = {"uri": OTHER, "languageId": "python", "version": 1, "text": "# copyedit: add a docstring\nx = 1\n"}
    change = {"textDocument": {"uri": DOCUMENT, "version": 99}, "contentChanges": [{"text": "y = 2\n"}]}
    sent_with_id = [
        ("textDocument/didOpen", {"textDocument": item}),
        ("textDocument/didChange", change),
        ("textDocument/didClose", {"textDocument": {"uri": DOCUMENT}}),
        ("workspace/didChangeConfiguration", {"settings": {"copyedit": {"maxFileBytes": 1}}}),
        ("$/cancelRequest", {"id": msg_id - 1}),
        ("exit", None),
    ]
    if rng.random() < 0.7:
        method, params = rng.choice(sent_with_id)
        return Case(frame(request(msg_id, method, params)), msg_id, -32601)
    method = rng.choice(["shutdown", "textDocument/codeAction", "workspace/executeCommand"])
    return Case(frame(notification(method, code_action_params() if method == "textDocument/codeAction" else None)))


CLASSES = {
    "framing": framing_case,
    "garbage": garbage_case,
    "bad-params": bad_params_case,
    "unknown-method": unknown_method_case,
    "deep": deep_case,
    "long": long_case,
    "hostile-id": hostile_id_case,
    "encoding": encoding_case,
    "notification-id": notification_id_case,
}


def assert_answer(answer: dict, expect: object) -> None:
    if expect == RESULT:
        assert "result" in answer and "error" not in answer, str(answer)[:300]
    elif isinstance(expect, tuple):
        code, named = expect
        assert answer["error"]["code"] == code and named in answer["error"]["message"], str(answer)[:300]
    elif isinstance(expect, int):
        assert answer["error"]["code"] == expect, str(answer)[:300]


@pytest.mark.parametrize("kind", CLASSES)
def test_fuzz_every_hostile_message_is_answered_as_json_rpc_says(server, kind, pytestconfig):
    """Every request of the class answered within 10 s with its code, every null-id error it must
    draw drawn, nothing else changed (the document still open at version 1, OTHER never opened),
    and the server's peak memory within 100 MB of its size after warm-up."""
    per_class = pytestconfig.getoption("--fuzz-per-class")
    initialize(server)
    rng = random.Random(f"{kind}-7")
    make = CLASSES[kind]
    sent, codes, nulls_expected, warm = 0, collections.Counter(), collections.Counter(), None
    for batch in range(0, per_class, 50):
        pending = []
        for index in range(batch, min(batch + 50, per_class)):
            case = make(rng, 1_000_000 + index)
            server.send(case.data)
            sent += 1
            if case.msg_id is not None:
                pending.append(case)
            if case.null_code is not None:
                nulls_expected[case.null_code] += 1
        check_alive_and_unchanged(server, 500_000 + batch)  # answered after every message before it
        for case in pending:
            answer = server.wait_for(case.msg_id, ANSWER_WITHIN)
            assert_answer(answer, case.expect)
            codes[answer["error"]["code"] if "error" in answer else RESULT] += 1
        if kind != "garbage":  # flipped bytes may draw a parse error or not
            drawn = collections.Counter(n["error"]["code"] for n in server.nulls)
            assert drawn == nulls_expected, (drawn, nulls_expected)
        warm = warm or server.rss()
    server.send(frame(request(9, "textDocument/codeAction", code_action_params(0, OTHER))))
    assert server.wait_for(9, ANSWER_WITHIN)["result"] == []  # OTHER was never opened
    peak = server.rss("VmHWM")
    assert peak - warm < 100 << 20, (peak, warm)
    assert server.process.poll() is None
    assert len(server.stderr) < 4 * LOG_CHARS * (per_class + 10)  # no message echoed whole
    print(
        f"\nfuzz {kind}: {sent} sent, {sum(codes.values())} answered by id {dict(codes)}, "
        f"{len(server.nulls)} null-id errors {dict(collections.Counter(n['error']['code'] for n in server.nulls))}, "
        f"peak RSS {peak / 2**20:.0f} MB (warm {warm / 2**20:.0f} MB), 0 crashes"
    )


def test_out_of_order_lifecycle_gets_the_codes_of_each_state(pytestconfig):
    """Random runs of initialize, initialized, shutdown, requests and notifications before, between
    and after them, each on a fresh server: each request's code is the one its state calls for."""
    rng = random.Random(11)
    runs = max(4, pytestconfig.getoption("--fuzz-per-class") // 25)
    messages = ["initialize", "initialized", "shutdown", "codeAction", "didOpen"]
    for run in range(runs):
        server = Server()
        try:
            initialized = shut = False
            for step in range(25):
                method = rng.choice(messages)
                msg_id = run * 100 + step
                if method == "initialize":
                    server.send(
                        frame(request(msg_id, "initialize", {"capabilities": {}, "initializationOptions": OPTIONS}))
                    )
                    expect = -32600 if initialized or shut else RESULT
                    initialized = True
                elif method == "shutdown":
                    server.send(frame(request(msg_id, "shutdown", None)))
                    expect = -32002 if not initialized else -32600 if shut else RESULT
                    shut = shut or initialized
                elif method == "codeAction":
                    server.send(frame(request(msg_id, "textDocument/codeAction", code_action_params())))
                    expect = -32002 if not initialized else -32600 if shut else RESULT
                else:
                    item = {"uri": DOCUMENT, "languageId": "python", "version": 1, "text": TEXT}
                    note = {"textDocument": item} if method == "didOpen" else {}
                    server.send(frame(notification(f"textDocument/{method}" if method == "didOpen" else method, note)))
                    continue
                assert_answer(server.wait_for(msg_id, ANSWER_WITHIN), expect)
            assert server.process.poll() is None
        finally:
            server.close()


def test_a_body_that_never_arrives_is_given_up_and_what_came_is_read(server):
    """A Content-Length longer than the body that comes: after a second without more bytes the
    body is taken as it is, so the request is answered and the server is not left waiting."""
    initialize(server)
    body = request(7, "textDocument/codeAction", code_action_params())
    server.send(frame(body, len(body) + 500))
    assert isinstance(server.wait_for(7, ANSWER_WITHIN)["result"], list)
    check_alive_and_unchanged(server, 8)


def test_the_log_cuts_each_record_to_its_bound(server):
    """An unknown method a megabyte long is logged, cut to 2,000 characters."""
    initialize(server)
    server.send(frame(request(1, "$/" + "y" * (1 << 20), {})))
    assert server.wait_for(1)["error"]["code"] == -32601
    check_alive_and_unchanged(server, 2)
    lines = [line for line in bytes(server.stderr).decode("utf-8", "replace").splitlines() if "yyyy" in line]
    assert lines and any("more characters)" in line for line in lines)
    assert all(len(line) < LOG_CHARS + 200 for line in lines), max(map(len, lines))


def test_a_huge_content_length_is_survived(server):
    initialize(server)
    server.send(b"Content-Length: 10000000000000000000\r\n\r\n")
    server.send(b"Content-Length: 1000000000000\r\n\r\n")
    server.send(frame(request(9, "textDocument/codeAction", code_action_params())))
    assert isinstance(server.wait_for(9)["result"], list)


def test_unknown_methods_and_huge_documents_keep_memory_and_latency_bounded(server):
    initialize(server)
    server.send(frame(request(1, "textDocument/codeAction", code_action_params())))
    server.wait_for(1)
    before = server.rss()
    for k in range(30):  # 30 distinct 4 MB method names: nothing may keep them
        server.send(frame(request(10 + k, f"$/{k}{'x' * (4 << 20)}", {})))
        assert server.wait_for(10 + k)["error"]["code"] == -32601
    assert server.rss() - before < 64 << 20
    huge = {"uri": "file:///tmp/huge.py", "languageId": "python", "version": 1, "text": "x = 1\n" * (3 << 20)}
    server.send(frame(notification("textDocument/didOpen", {"textDocument": huge})))
    params = code_action_params() | {"textDocument": {"uri": huge["uri"]}}
    server.send(frame(request(50, "textDocument/codeAction", params)))
    assert server.wait_for(50)["result"] == []  # past maxFileBytes: nothing offered, no parse


def test_a_header_before_content_length_is_read_without_a_complaint():
    body = request(1, "shutdown", None)
    framer = MessageFramer()
    framer.feed(
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" + frame(body) + b"junk\r\n" + frame(body)
    )
    message = Message(json.loads(body))
    assert list(framer.messages()) == [message, "dropped 6 bytes outside any message", message]


RECORDED = sorted((Path(pytest_lsp.__file__).parent / "clients").glob("*.json"))  # real clients' initialize


@pytest.mark.parametrize("recorded", RECORDED, ids=lambda path: path.stem)
def test_the_initialize_of_real_clients_passes_the_depth_bound(recorded):
    """The initialize params pytest-lsp recorded from VS Code, Neovim and Emacs, framed as their
    request: read whole (nothing cut), and answered with the server's capabilities."""
    params = json.loads(recorded.read_text()) | {"initializationOptions": OPTIONS}
    framer = MessageFramer()
    framer.feed(frame(request(0, "initialize", params)))
    (message,) = framer.messages()
    assert not message.cut and message.data["params"] == params
    server = Server()
    try:
        server.send(frame(request(0, "initialize", params)))
        assert "capabilities" in server.wait_for(0)["result"]
    finally:
        server.close()


def test_a_million_nested_brackets_are_cut_cheaply_at_the_bound():
    """The framer cuts a value nested past the bound to null before it parses (no recursion), and
    says so; one level less is read whole."""
    framer = MessageFramer()
    deep = b'{"id": 1, "x": ' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}"
    shallow = b'{"id": 2, "x": ' + b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1) + b"}"
    framer.feed(frame(deep) + frame(shallow))
    first, second = framer.messages()
    assert first.cut and second.data["id"] == 2 and not second.cut
    value, depth = first.data["x"], 1
    while isinstance(value, list):
        value, depth = value[0], depth + 1
    assert value is None and depth == MAX_DEPTH  # cut exactly at the bound


def test_brackets_and_escaped_quotes_inside_strings_are_not_nesting():
    """Keys and ids holding brackets, escaped quotes and backslashes: only the real nesting counts."""
    key = r'"a\\\"[{\\"'  # the JSON text of a key: a, backslash, quote, [, {, backslash
    nested = (("{" + key + ":") * 1000 + "1" + "}" * 1000).encode()
    body = b'{"id": "x\\"[", "x": ' + nested + b', "y": "' + b"[" * 500 + b'"}'
    (message,) = _framed(body)
    assert message.cut and message.data["id"] == 'x"[' and message.data["y"] == "[" * 500
    value, depth = message.data["x"], 1
    while isinstance(value, dict):
        (value,) = value.values()
        depth += 1
    assert value is None and depth == MAX_DEPTH
    text = b'{"id": 3, "s": "' + b'[{\\"' * 10_000 + b'"}'  # deep only to a reader that takes text for nesting
    (plain,) = _framed(text)
    assert not plain.cut and plain.data["s"] == '[{"' * 10_000


def test_a_response_nested_too_deep_is_dropped_and_the_server_serves_on(server):
    """A client's answer to one of the server's requests, nested past the bound: logged, dropped."""
    initialize(server)
    deep = b'{"jsonrpc": "2.0", "id": "copyedit-x", "result": ' + b"[" * 1000 + b"]" * 1000 + b"}"
    server.send(frame(deep))
    check_alive_and_unchanged(server, 3)
    assert b"a response: nested past" in server.stderr and b"Traceback" not in server.stderr


def _framed(body: bytes) -> list:
    framer = MessageFramer()
    framer.feed(frame(body))
    return list(framer.messages())


EXAMPLE = Path(__file__).parents[1] / "examples" / "stats.py"


def edit_results(server: Server) -> list[dict]:
    """The answers to the edit command (its id reused by code actions: theirs are lists or errors)."""
    return [a["result"] for a in server.answers["edit"] if isinstance(a.get("result"), dict)]


@pytest.mark.model
def test_soak_traffic_while_an_edit_runs(small_model_path):
    """While a real edit of mean() runs: code actions, changes to another document, cancels of
    requests already answered, a request reusing the edit's id (-32600, the edit unharmed) and
    hostile messages; every request answered, and the edit's result the fix, the rest kept."""
    server = Server()
    try:
        text = EXAMPLE.read_text()
        options = SETTINGS | {"nThreads": 2, "review": "never"}  # the 0.5B and its shipped selector
        server.send(frame(request(0, "initialize", {"capabilities": {}, "initializationOptions": options})))
        server.wait_for(0, 120)
        server.send(frame(notification("initialized", {})))
        for uri, body in ((DOCUMENT, text), (OTHER, TEXT)):
            item = {"uri": uri, "languageId": "python", "version": 1, "text": body}
            server.send(frame(notification("textDocument/didOpen", {"textDocument": item})))
        cursor = {"line": 5, "character": 8}
        arguments = {"uri": DOCUMENT, "range": {"start": cursor, "end": cursor}, "instruction": "Fix the bug in mean."}
        edit = {"command": "copyedit.edit", "arguments": [arguments]}
        server.send(frame(request("edit", "workspace/executeCommand", edit)))
        rng, msg_id, version = random.Random(3), 1, 1
        hostile = [b"[" * 100_000, b'{"jsonrpc": "2.0", "id": 1.5, "method": "shutdown"}', b"\xff\xfe", b"{}"]
        while not edit_results(server):
            msg_id += 1
            kind = rng.randrange(5)
            if kind == 0:
                server.send(frame(request(msg_id, "textDocument/codeAction", code_action_params(rng.randrange(3)))))
                assert isinstance(server.wait_for(msg_id, ANSWER_WITHIN)["result"], list)
            elif kind == 1:
                version += 1
                change = {
                    "textDocument": {"uri": OTHER, "version": version},
                    "contentChanges": [{"text": TEXT * version}],
                }
                server.send(frame(notification("textDocument/didChange", change)))
            elif kind == 2:
                server.send(frame(notification("$/cancelRequest", {"id": rng.randrange(1, msg_id)})))
            elif kind == 3:
                server.send(frame(request("edit", "textDocument/codeAction", code_action_params())))
            else:
                server.send(frame(rng.choice(hostile)))
            time.sleep(0.05)
            assert server.process.poll() is None and msg_id < 20_000
        (result,) = edit_results(server)
        assert result["applied"] is True, result
        assert fix_problems(text, result["text"], "mean", ([1, 2, 6],), 3.0) == []
        others = [a for a in server.answers["edit"] if not isinstance(a.get("result"), dict)]
        refused = [a for a in others if "error" in a]
        assert refused and all(a["error"]["code"] == -32600 for a in refused)  # the id was in use
        assert all(isinstance(a["result"], list) for a in others if "error" not in a)  # sent once it was free
        assert len(server.nulls) > 0 and {n["error"]["code"] for n in server.nulls} <= {-32600, -32700}
        server.send(frame(request(msg_id + 1, "textDocument/codeAction", code_action_params())))
        assert isinstance(server.wait_for(msg_id + 1, ANSWER_WITHIN)["result"], list)
    finally:
        server.close()
