"""Reading JSON-RPC messages from a byte stream that may hold anything.

pygls's stdio reader trusts every ``Content-Length``: a huge one kills the process, one that is
off by a byte (or zero, negative, lower-case, LF-only, missing) leaves it alive but deaf.  The
server reads stdin and TCP connections through :class:`MessageFramer` instead: a header is found wherever it starts
(``content-length`` in any case, CRLF or LF line ends), a length outside 1..``max_bytes`` is
reported, and a body is taken as declared only if it is JSON; otherwise as the first JSON value
between the header and the next header (so a message with a wrong length is still read).  A JSON body holds no raw line break, so a header inside
a declared body means the length was wrong.  Bytes no header frames are dropped, and each drop
is reported once, in a short line; no state carries into the next message.

A body is parsed without recursion past :data:`MAX_DEPTH` levels: values nested deeper are cut to
``null`` before the parse (a vectorised scan, so a million brackets cost milliseconds) and the
message says it was cut, so the server can refuse it with the request's own id.  A framed body that
is not JSON, not UTF-8, or holds a lone surrogate is reported as :class:`Unparsed` (JSON-RPC's
parse error), never raised.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

HEADER = re.compile(
    rb"content-length[ \t]*:[ \t]*([^\r\n]*)\r?\n(?:[!-9;-~]+[ \t]*:[^\r\n]*\r?\n)*\r?\n", re.IGNORECASE
)
OTHER_HEADERS = re.compile(rb"(?:[!-9;-~]+[ \t]*:[^\r\n]*\r?\n)+")
MAX_MESSAGE_BYTES = 64 << 20  # a message's body; the server refuses documents past maxFileBytes anyway
BODY_TIMEOUT = 1.0  # seconds a declared body may take to arrive before what came is taken as it is
MAX_DEPTH = 128  # levels of arrays and objects a message may nest; VS Code's initialize nests 9
LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # an escaped surrogate, maybe half of a pair
SCAN_CHUNK = 1 << 20  # bytes the depth scan holds at once
_STEP = np.zeros(256, np.int8)  # a structural byte's change of depth
_STEP[list(b"[{")] = 1
_STEP[list(b"]}")] = -1


class MessageFramer:
    """Bytes in, messages (their JSON, parsed once) and drop reports out."""

    def __init__(self, max_bytes: int = MAX_MESSAGE_BYTES):
        self.max_bytes = max_bytes
        self.buffer = bytearray()
        self.scanned = 0  # the buffer holds no header before this offset past the first (a body arriving)

    @property
    def pending(self) -> bool:
        """Whether bytes wait for more to come (a header without its whole body, say): after
        :meth:`messages`, whatever the buffer still holds (it keeps no bare whitespace)."""
        return bool(self.buffer)

    def feed(self, data: bytes) -> None:
        self.buffer += data

    def messages(self, *, flush: bool = False) -> Iterator[Message | Unparsed | str]:
        """The messages the buffer holds, as their parsed JSON, the framed bodies that do not parse
        (:class:`Unparsed`), and why bytes were dropped (str).

        ``flush``: no more bytes are coming soon, so a body still short of its length is taken
        as it is and unframed bytes are dropped."""
        while True:
            header = HEADER.search(self.buffer)
            if header is None:
                yield from self._unframed(flush)
                return
            before = bytes(self.buffer[: header.start()])
            if before.strip() and not OTHER_HEADERS.fullmatch(before):  # headers before Content-Length are fine
                yield f"dropped {header.start()} bytes outside any message"
            value = bytes(header.group(1).strip())
            start = header.end()
            valid = value.isdigit() and 0 < int(value) <= self.max_bytes
            following = HEADER.search(self.buffer, max(start, self.scanned))
            end = start + int(value) if valid else start  # a bad length: the JSON value after the header, if any
            if following is None and len(self.buffer) < end and not flush:
                del self.buffer[: header.start()]
                self.scanned = max(len(self.buffer) - 256, 0)  # a large body is scanned once, not per chunk
                return  # the body is still coming
            self.scanned = 0
            taken = self._body(start, end, following.start() if following else len(self.buffer))
            if taken is None:
                if following is None and not flush:
                    del self.buffer[: header.start()]
                    return
                stop = following.start() if following else len(self.buffer)
                del self.buffer[:stop]
                yield Unparsed(f"a body of {stop - start} bytes (Content-Length {value[:24]!r}) is not UTF-8 JSON")
                continue
            message, stop = taken
            del self.buffer[:stop]
            if not valid:
                yield f"a message with Content-Length {value[:24]!r} (1 to {self.max_bytes} allowed) read as its JSON"
            yield message

    def _body(self, start: int, end: int, limit: int) -> tuple[Message, int] | None:
        """The message at ``start`` and where its body ends: the declared bytes if they are JSON,
        else the first JSON value before ``limit`` (the next header or the end of the buffer)."""
        if end <= limit:
            try:
                return parse(bytes(self.buffer[start:end])), end
            except ValueError:  # UnicodeDecodeError is one
                pass
        text = bytes(self.buffer[start:limit])
        stripped = text.lstrip()
        decoded = stripped.decode("utf-8", errors="surrogateescape")  # garbage may follow the value
        try:
            length = json.JSONDecoder().raw_decode(decoded)[1]  # where the value ends
            used = len(decoded[:length].encode("utf-8"))  # strict: the value itself must be UTF-8
            message = parse(stripped[:used])
        except (ValueError, UnicodeEncodeError, RecursionError):  # raw_decode recurses: deep is refused
            return None
        return message, start + len(text) - len(stripped) + used

    def _unframed(self, flush: bool) -> Iterator[str]:
        """Bytes with no header: the tail kept while a header may still be arriving, the rest dropped."""
        keep = 0 if flush else 1024
        if not self.buffer.strip():
            self.buffer.clear()
        elif len(self.buffer) > keep and (flush or len(self.buffer) > 4096):
            dropped = len(self.buffer) - keep
            del self.buffer[:dropped]
            yield f"dropped {dropped} bytes outside any message"


@dataclass(frozen=True)
class Message:
    """One framed message: its JSON value (a JSON-RPC message if it is an object); ``cut``: values
    nested past :data:`MAX_DEPTH` were replaced by ``null``."""

    data: object
    cut: bool = False


@dataclass(frozen=True)
class Unparsed:
    """A framed body that is not a JSON text in UTF-8: why, for the log and the parse error."""

    why: str


def parse(body: bytes) -> Message:
    """A body's JSON value, strictly (UTF-8, no NaN, no lone surrogate, no recursion past
    :data:`MAX_DEPTH`); ValueError if it is not JSON."""
    bounded, cut = _cut_deep(body)
    data = json.loads(bounded.decode("utf-8"), parse_constant=_not_json)
    _check_text(bounded, data)
    return Message(data, cut)


def _not_json(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")


def _check_text(body: bytes, data: object) -> None:
    """ValueError if ``data`` holds a string no UTF-8 can carry (an escaped lone surrogate)."""
    if LONE_SURROGATE.search(body):
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds a lone surrogate") from None


def _cut_deep(body: bytes) -> tuple[bytes, bool]:
    """``body`` with each value nested past :data:`MAX_DEPTH` replaced by ``null``, and whether
    any was; ValueError where the brackets do not balance.  Vectorised, a chunk at a time: an
    escaped backslash or quote is blanked (same offsets), so every quote left opens or closes a
    string."""
    if body.count(b"[") + body.count(b"{") <= MAX_DEPTH:
        return body, False
    unescaped = body.replace(b"\\\\", b"__").replace(b'\\"', b"__")  # left to right, as JSON reads them
    opens, closes, level, quotes = [], [], 0, 0
    for at in range(0, len(unescaped), SCAN_CHUNK):
        chunk = np.frombuffer(unescaped, np.uint8, count=min(SCAN_CHUNK, len(unescaped) - at), offset=at)
        quoted = np.cumsum(chunk == ord('"'), dtype=np.int64) + quotes
        steps = np.where(quoted & 1, 0, _STEP[chunk])  # a bracket inside a string is text
        depth = np.cumsum(steps, dtype=np.int64) + level
        opens += (at + np.flatnonzero((steps == 1) & (depth == MAX_DEPTH + 1))).tolist()
        closes += (at + np.flatnonzero((steps == -1) & (depth == MAX_DEPTH))).tolist()
        level, quotes = int(depth[-1]), int(quoted[-1])
    if not opens:
        return body, False
    if len(opens) != len(closes) or any(close < open_ for open_, close in zip(opens, closes, strict=True)):
        raise ValueError("brackets that do not balance")
    pieces, start = [], 0
    for open_, close in zip(opens, closes, strict=True):
        pieces += [body[start:open_], b"null"]
        start = close + 1
    return b"".join([*pieces, body[start:]]), True


Read = Callable[[], Awaitable[bytes]]  # the next chunk of a byte stream; b"" at its end


def thread_reader(stream: BinaryIO) -> Read:
    """Chunks of ``stream`` read on a thread (so the event loop never blocks on a file); call it
    inside the running loop."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue()

    def pump() -> None:
        while True:
            try:
                chunk = os.read(stream.fileno(), 1 << 16)
            except OSError:
                chunk = b""
            loop.call_soon_threadsafe(chunks.put_nowait, chunk)
            if not chunk:
                return

    threading.Thread(target=pump, name="copyedit-stdin", daemon=True).start()
    return chunks.get


async def read_messages(
    read: Read, handle: Callable[[Message | Unparsed], None], stop: threading.Event, log: logging.Logger
) -> None:
    """Frame the bytes ``read`` gives (stdin through :func:`thread_reader`, a TCP connection's
    ``StreamReader.read``) and pass each message (or body that does not parse) to ``handle`` until
    the stream ends or ``stop``; a body still short of its length after :data:`BODY_TIMEOUT`
    seconds without new bytes is taken as it is.  Nothing ``handle`` raises stops the reading."""
    framer = MessageFramer()
    while not stop.is_set():
        try:
            chunk = await asyncio.wait_for(read(), BODY_TIMEOUT if framer.pending else None)
        except TimeoutError:
            chunk = None
        if chunk == b"":
            return
        if chunk is not None:
            framer.feed(chunk)
        for item in framer.messages(flush=chunk is None):
            if isinstance(item, str):
                log.warning("%s", item)
                continue
            try:
                handle(item)
            except Exception:  # RecursionError and MemoryError included: the next message is read
                log.exception("a message could not be handled")
