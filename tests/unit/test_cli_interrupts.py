"""Ctrl-C at an interactive command's prompt always reaches it (docs/cli.md: Ctrl-C leaves with status 130).

Regression (issue 29, seen once in a full run of tests/e2e/test_e2e_cli_pty.py): the SIGINT landed while the main
thread ran a weakref callback, where Python prints a raised `KeyboardInterrupt` as "Exception ignored" and drops
it; the handler had counted it as delivered, so it was not sent again and `zeroclaw rpc` stayed at its prompt.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType, SimpleNamespace

import pytest

from app.cli import terminal
from app.cli.terminal import _Interrupts


def frame_in(filename: str, name: str = "callback") -> FrameType:
    namespace: dict[str, object] = {}
    exec(compile(f"import sys\ndef {name}():\n    return sys._getframe()\n", filename, "exec"), namespace)
    frame: FrameType = namespace[name]()  # type: ignore[operator]
    return frame


@pytest.mark.parametrize(
    "frame",
    [frame_in("/usr/lib/python3/_weakrefset.py", "_remove"), frame_in("/usr/lib/python3/weakref.py"),
     frame_in("/app/x.py", "__del__")],
    ids=["WeakSet callback", "weakref callback", "__del__"],
)  # fmt: skip
def test_a_sigint_inside_a_finalizer_is_left_to_be_sent_again(frame: FrameType) -> None:
    interrupts = SimpleNamespace(handled=0)
    _Interrupts._handler(interrupts, signal.SIGINT, frame)  # type: ignore[arg-type]
    assert interrupts.handled == 0  # not counted: `_repeat` sends it again while the prompt still waits


def test_a_sigint_anywhere_else_interrupts_at_once() -> None:
    interrupts = SimpleNamespace(handled=0)
    with pytest.raises(KeyboardInterrupt):
        _Interrupts._handler(interrupts, signal.SIGINT, sys._getframe())  # type: ignore[arg-type]
    assert interrupts.handled == 1


def test_a_sigint_inside_readlines_pre_input_hook_is_left_to_be_sent_again() -> None:
    """Regression (test_rpc_interactive_initializes_first under load): a Ctrl-C handled while readline ran its
    pre-input hook (`_AbovePrompt`) raised `KeyboardInterrupt` there, which CPython's readline clears; counted as
    delivered, it was not sent again, and `zeroclaw rpc` stayed at its prompt."""
    frames: list[FrameType] = []
    drawn = terminal._reading.drawn
    try:
        terminal._AbovePrompt._prompt_drawn(SimpleNamespace(_print=lambda: frames.append(sys._getframe())))  # type: ignore[arg-type]
    finally:
        terminal._reading.drawn = drawn
    interrupts = SimpleNamespace(handled=0)
    try:
        _Interrupts._handler(interrupts, signal.SIGINT, frames[0])  # type: ignore[arg-type]
    except KeyboardInterrupt:
        pytest.fail("raised inside readline's hook, where it is cleared")
    assert interrupts.handled == 0  # not counted: `_repeat` sends it again, to land in readline's wait
