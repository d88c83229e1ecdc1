"""NDJSON line splitting with the frame limit (R-WIRE-1, R-WIRE-2). Pure: bytes in, lines out, no I/O.

The limit counts the terminating newline, so a line of `limit - 1` bytes plus `\\n` is the largest frame.
A partial line is kept as a list of chunks and joined once, when its newline arrives, so a large frame costs
one copy; the splitter raises as soon as the partial line can no longer fit, so it never holds more than the
limit plus the read that crossed it.
"""

from __future__ import annotations

__all__ = ["FrameTooLarge", "LineSplitter"]


class FrameTooLarge(Exception):
    """The peer sent a line longer than the frame limit; the connection must be closed.

    `lines` holds the complete frames that arrived before the oversize one in the same read: they are
    still the peer's requests and get answered before the connection closes.
    """

    def __init__(self, lines: list[bytes]) -> None:
        super().__init__("frame too large")
        self.lines = lines


class LineSplitter:
    __slots__ = ("_chunks", "_limit", "_partial_size")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._chunks: list[bytes | memoryview] = []
        self._partial_size = 0

    @property
    def buffered(self) -> int:
        """Bytes of the current partial line held in memory."""
        return self._partial_size

    def feed(self, data: bytes) -> list[bytes]:
        """Return the complete lines in `data` (without `\\n` or a trailing `\\r`); blank lines are dropped."""
        end = data.rfind(b"\n")
        if end < 0:
            self._keep_partial(data, [])
            return []
        if self._chunks:
            first = data.find(b"\n")
            head = self._join_partial(data, first)
            lines = [head, *data[first + 1 : end].split(b"\n")] if first < end else [head]
        else:
            lines = data[:end].split(b"\n")
        limit = self._limit - 1
        out: list[bytes] = []
        for line in lines:
            if len(line) > limit:
                raise FrameTooLarge(out)
            if line.endswith(b"\r"):
                line = line[:-1]
            if line and not line.isspace():
                out.append(line)
        rest = data[end + 1 :]
        if rest:
            self._keep_partial(rest, out)
        return out

    def finish(self) -> bytes | None:
        """End of input: the partial line, if any, as a last frame (R-WIRE-9; a final line without `\\n` is
        still a frame, as most NDJSON readers take it). None when nothing but whitespace is left."""
        if not self._chunks:
            return None
        line = b"".join(self._chunks)
        self._reset()
        if line.endswith(b"\r"):
            line = line[:-1]
        return None if not line or line.isspace() else line

    def _keep_partial(self, data: bytes, complete: list[bytes]) -> None:
        if self._partial_size + len(data) >= self._limit:
            # Even a newline arriving next would make the frame limit + 1 bytes long.
            self._reset()
            raise FrameTooLarge(complete)
        self._partial_size += len(data)
        self._chunks.append(data)

    def _join_partial(self, data: bytes, newline_at: int) -> bytes:
        if self._partial_size + newline_at + 1 > self._limit:
            self._reset()
            raise FrameTooLarge([])
        self._chunks.append(memoryview(data)[:newline_at])
        line = b"".join(self._chunks)
        self._reset()
        return line

    def _reset(self) -> None:
        self._chunks.clear()
        self._partial_size = 0
