"""What only Python's cyclic GC could free: a closed connection or a finished turn must be freed by reference
counting alone, because the collector's pauses are what a busy daemon's slowest answers wait for (docs/limits.md,
"Garbage"; found by benchmarks/soak.py)."""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["cyclic_garbage"]


@contextmanager
def cyclic_garbage() -> Iterator[Counter[str]]:
    """Run the block with the collector off; on exit, fill the yielded counter with the type names of what the
    block left that only a collection frees (nothing the block still references is counted)."""
    found: Counter[str] = Counter()
    gc.collect()
    gc.disable()  # or a collection during the block would free the cycles before they are counted
    try:
        yield found
    finally:
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            found.update(type(o).__name__ for o in gc.garbage)
        finally:
            gc.garbage.clear()
            gc.set_debug(0)
            gc.enable()
