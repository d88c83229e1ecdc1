"""The chain of exceptions behind one: itself, then what it was raised from or during (bounded)."""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["causes"]

MAX_DEPTH = 8  # a chain is short; the bound also ends a cycle


def causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, its `__cause__` (or else `__context__`), and so on."""
    seen: BaseException | None = exc
    for _ in range(MAX_DEPTH):
        if seen is None:
            return
        yield seen
        seen = seen.__cause__ or seen.__context__
