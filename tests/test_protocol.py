"""The server over a raw byte stream: malformed framing, bad params and lifecycle misuse never kill
it, leave it deaf or go unanswered (no model: plumbing only, the model path does not exist)."""

from __future__ import annotations

import json
import queue
import random
import socket
import subprocess
import sys
import threading
import time

import pytest

from copyedit_lsp.framing import Message, MessageFramer

DOCUMENT = "file:///tmp/fuzz.py"
TEXT = "def area(radius):\n    return 3.14 * radius * 2\n"
OPTIONS = {"model": "/nonexistent/model.gguf"}


def frame(body: bytes, length: object = None, *, name: bytes = b"Content-Length", line_end: bytes = b"\r\n") -> bytes:
    declared = len(body) if length is None else length
    return name + b": " + str(declared).encode() + line_end + line_end + body


def request(msg_id: int, method: str, params: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()


def notification(method: str, params: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode()


def code_action_params(line: int = 0) -> dict:
    position = {"line": line, "character": 0}
    return {
        "textDocument": {"uri": DOCUMENT},
        "range": {"start": position, "end": position},
        "context": {"diagnostics": []},
    }


class Server:
    """The language server as a subprocess over stdio or TCP, its answers collected by id."""

    def __init__(self, transport: str = "stdio") -> None:
        command = [sys.executable, "-m", "copyedit_lsp.server"]
        if transport == "tcp":
            with socket.socket() as probe:  # a free port
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            command += ["--tcp", f"127.0.0.1:{port}"]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.socket = _connect(port, self.process) if transport == "tcp" else None
        self.answers: dict[object, dict] = {}
        self.arrived: queue.Queue[dict] = queue.Queue()
        self.stderr = bytearray()
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
                if "id" in message and "method" not in message:
                    self.answers[message["id"]] = message
                self.arrived.put(message)

    def _drain(self) -> None:
        while chunk := self.process.stderr.read1(1 << 16):
            self.stderr += chunk

    def send(self, data: bytes) -> None:
        if self.socket:
            self.socket.sendall(data)
        else:
            self.process.stdin.write(data)
            self.process.stdin.flush()

    def wait_for(self, msg_id: object, timeout: float = 20.0) -> dict:
        deadline = time.monotonic() + timeout
        while msg_id not in self.answers:
            assert self.process.poll() is None, f"the server exited: {bytes(self.stderr[-2000:])!r}"
            assert time.monotonic() < deadline, f"no answer to request {msg_id}"
            time.sleep(0.01)
        return self.answers[msg_id]

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


def test_lifecycle_misuse_gets_the_errors_lsp_names(server):
    server.send(frame(request(1, "textDocument/codeAction", code_action_params())))
    assert server.wait_for(1)["error"]["code"] == -32002  # before initialize
    initialize(server)
    server.send(frame(request(2, "initialize", {"capabilities": {}})))
    assert server.wait_for(2)["error"]["code"] == -32600  # a second initialize
    server.send(frame(request(3, "textDocument/codeAction", code_action_params())))
    assert isinstance(server.wait_for(3)["result"], list)
    server.send(frame(request(4, "shutdown", None)))
    assert server.wait_for(4).get("result") is None and "error" not in server.answers[4]
    server.send(frame(request(5, "textDocument/codeAction", code_action_params())))
    assert server.wait_for(5)["error"]["code"] == -32600  # after shutdown


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


def fuzz_messages(rng: random.Random, first_id: int, count: int):
    """``count`` messages of every class: (bytes, id of a request that must be answered or None,
    the error code it must get or None)."""
    good = lambda i: request(i, "textDocument/codeAction", code_action_params(rng.randrange(0, 3)))  # noqa: E731
    msg_id = first_id
    for _ in range(count):
        msg_id += 1
        kind = rng.randrange(12)
        if kind == 0:
            method, params, _ = rng.choice(BAD_PARAMS)
            yield frame(request(msg_id, method, params)), msg_id, -32602
        elif kind == 1:
            yield frame(good(msg_id), len(good(msg_id)) + rng.choice([-1, 1, 2])), msg_id, None
        elif kind == 2:
            yield frame(good(msg_id), rng.choice([0, -1, "abc", "", 10**12, 10**20])), msg_id, None
        elif kind == 3:
            yield frame(good(msg_id), name=b"content-length"), msg_id, None
        elif kind == 4:
            yield frame(good(msg_id), line_end=b"\n"), msg_id, None
        elif kind == 5:
            yield good(msg_id) + b"\r\n", None, None  # a body without a header
        elif kind == 6:
            body = good(msg_id)
            yield frame(body[: rng.randrange(1, len(body))]), None, None  # truncated JSON
        elif kind == 7:
            body = bytearray(good(msg_id))
            for _ in range(rng.randrange(1, 4)):
                body[rng.randrange(len(body))] = rng.randrange(256)
            yield frame(bytes(body)), None, None  # mutated bytes: answered if they still parse
        elif kind == 8:
            yield frame(request(msg_id, f"$/unknown/{'x' * rng.randrange(1, 2000)}", {})), msg_id, -32601
        elif kind == 9:
            yield frame(notification("textDocument/didChange", {"bogus": [1, 2, 3]})), None, None
        elif kind == 10:
            yield bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))) + b"\r\n", None, None
        else:
            yield frame(good(msg_id)), msg_id, None


def test_two_thousand_malformed_messages_never_crash_deafen_or_go_unanswered(server):
    initialize(server)
    rng = random.Random(7)
    sent = answered = 0
    for batch in range(20):
        expected = []
        for data, msg_id, code in fuzz_messages(rng, 100_000 * (batch + 1), 100):
            server.send(data)
            sent += 1
            if msg_id is not None:
                expected.append((msg_id, code))
        check = 100_000 * (batch + 1) + 99_999
        server.send(frame(request(check, "textDocument/codeAction", code_action_params(0))))
        actions = server.wait_for(check)["result"]
        assert any("instruction" in action["title"].lower() for action in actions), actions
        for msg_id, code in expected:
            answer = server.wait_for(msg_id, timeout=5.0)
            answered += 1
            if code is not None:
                assert answer["error"]["code"] == code, answer
            if code == -32602:
                assert any(field in answer["error"]["message"] for _, _, field in BAD_PARAMS), answer
    assert sent == 2000 and answered > 1000
    assert server.process.poll() is None
    assert len(server.stderr) < 2_000_000  # the log is bounded: no message echoed whole


def test_a_huge_content_length_is_survived(server):
    initialize(server)
    server.send(b"Content-Length: 10000000000000000000\r\n\r\n")
    server.send(b"Content-Length: 1000000000000\r\n\r\n")
    server.send(frame(request(9, "textDocument/codeAction", code_action_params())))
    assert isinstance(server.wait_for(9)["result"], list)


def rss_bytes(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_unknown_methods_and_huge_documents_keep_memory_and_latency_bounded(server):
    initialize(server)
    server.send(frame(request(1, "textDocument/codeAction", code_action_params())))
    server.wait_for(1)
    before = rss_bytes(server.process.pid)
    for k in range(30):  # 30 distinct 4 MB method names: nothing may keep them
        server.send(frame(request(10 + k, f"$/{k}{'x' * (4 << 20)}", {})))
        assert server.wait_for(10 + k)["error"]["code"] == -32601
    assert rss_bytes(server.process.pid) - before < 64 << 20
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
