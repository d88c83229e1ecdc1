"""Helpers the built-in tools share: argument checks, output capping, workspace confinement, elicitation outcomes.

Tools answer problems with a sentence (the model reads it and can try again), so the checks here return the
sentence instead of raising.
"""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import Any

from app.agents.base import Elicitation

__all__ = [
    "PathRefused",
    "elicitation_outcome",
    "fit_output",
    "invalid",
    "resolve_in_workspace",
    "string_argument",
]


def string_argument(arguments: dict[str, Any], name: str, *, allow_empty: bool = False) -> str | None:
    """The string argument `name`, or None when it is missing, not a string, or (unless allowed) blank."""
    value = arguments.get(name)
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        return None
    return value


def invalid(arguments: dict[str, Any], expected: str) -> str:
    """The sentence for arguments that do not fit; `_raw` is what a provider hands over for non-JSON ones."""
    if "_raw" in arguments:
        return f"Invalid arguments: they were not a JSON object. Expected {expected}."
    return f"Invalid arguments: expected {expected}."


def _utf8_prefix(data: bytes, budget: int) -> str:
    # A character cut in half is dropped, not shown as a replacement character.
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(data[:budget], final=False)
    encoded = text.encode()
    if len(encoded) > budget:  # replacement characters grew the text
        text = encoded[:budget].decode("utf-8", "ignore")
    return text


def fit_output(data: bytes, total: int, limit: int, footer: str = "") -> str:
    """`data` (the first bytes of a `total`-byte output) as text, then `footer` on its own line, all within
    `limit` UTF-8 bytes; when the output does not fit, a note says how much of it is shown."""
    footer_bytes = len(footer.encode()) + 1 if footer else 0
    text = _utf8_prefix(data, len(data))
    lines = [text] if text else []
    if total > len(data) or len(text.encode()) + 1 + footer_bytes > limit:
        # Sized for the widest number it can hold, so the note never pushes the result over the limit.
        widest = f"[output truncated: the first {total} of {total} bytes are shown]"
        text = _utf8_prefix(data, max(0, limit - len(widest.encode()) - 1 - footer_bytes))
        lines = [text] if text else []
        lines.append(f"[output truncated: the first {len(text.encode())} of {total} bytes are shown]")
    if footer:
        lines.append(footer)
    # A line ending in a newline needs no separator (the budget above allowed for one anyway).
    return "".join(line if line.endswith("\n") or i == len(lines) - 1 else line + "\n" for i, line in enumerate(lines))


class PathRefused(Exception):
    """A tool path that resolves outside the workspace; the message is the sentence for the result."""


def resolve_in_workspace(workspace: Path, raw: str) -> Path:
    """`raw` (relative to the workspace, or absolute inside it) with every symlink resolved, or PathRefused.

    Resolving first and comparing after is what catches `..`, absolute paths and symlinks that lead out.
    """
    if "\0" in raw:
        raise PathRefused("Refused: the path contains a NUL character.")
    try:
        root = workspace.resolve()
        target = (root / raw).resolve()
    except ValueError:  # a lone surrogate that the file system encoding cannot carry
        raise PathRefused("Refused: the path is not valid text.") from None
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python 3.11)
        raise PathRefused(f"Refused: {raw!r} cannot be resolved (a symlink loop?).") from None
    if not target.is_relative_to(root):
        raise PathRefused(f"Refused: {raw!r} is outside the workspace.")
    return target


def elicitation_outcome(answer: Elicitation, timeout: float) -> str:
    """The result sentence for an elicitation that brought no usable answer (anything but accept)."""
    if answer.action == "decline":
        return "The user declined to answer."
    if answer.action == "cancel":
        return "The user cancelled the question."
    if answer.action == "unanswered":
        return f"No answer: the user did not answer within {timeout:g} s."
    if answer.action == "unavailable":  # the reason says whether no client is attached, or one that cannot ask
        return f"No answer: {answer.reason or 'no interactive client is attached to this session'}."
    reason = f" ({answer.reason})" if answer.reason else ""
    return f"No answer: asking the user failed{reason}."
