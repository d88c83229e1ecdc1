"""`poll`: ask the prompting client to pick one of several options via `elicitation/create` (R-AGENT-3, R-BIDI-5)."""

from __future__ import annotations

from typing import Any

from app.agents.base import ToolContext, ToolSpec
from app.agents.tools._common import elicitation_outcome, invalid, string_argument
from app.agents.tools.ask_user import elicit

__all__ = ["PollTool", "choice_schema"]


def choice_schema(options: list[str]) -> dict[str, Any]:
    """The form R-BIDI-5 prescribes: one required string `choice` limited to the options."""
    return {
        "type": "object",
        "properties": {"choice": {"type": "string", "enum": list(options)}},
        "required": ["choice"],
    }


def _options(arguments: dict[str, Any]) -> list[str] | None:
    raw = arguments.get("options")
    if not isinstance(raw, list) or not all(isinstance(o, str) for o in raw):
        return None
    # An enum with blanks or duplicates is a poor form; keep the first of each, in order.
    options = list(dict.fromkeys(o.strip() for o in raw if o.strip()))
    return options if len(options) >= 2 else None


class PollTool:
    spec = ToolSpec(
        name="poll",
        description=(
            "Ask the user to pick exactly one of several options. The result is the chosen option, or a "
            "sentence saying the user declined, cancelled, did not answer in time, or that no interactive "
            "client is attached."
        ),
        parameters={
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question to show the user."},
                "options": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            },
            "required": ["question", "options"],
        },
    )
    needs_approval = False

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> str:
        question = string_argument(arguments, "question")
        options = _options(arguments)
        if question is None or options is None:
            return invalid(arguments, "a non-empty string `question` and `options`, a list of at least two strings")
        outcome = await elicit(context, question, choice_schema(options))
        if outcome.action != "accept":
            return elicitation_outcome(outcome, context.ask_timeout_secs)
        choice = outcome.content.get("choice")
        if not isinstance(choice, str):
            return "No answer: the client accepted but sent no `choice`."
        if choice not in options:
            return f"No valid answer: the client chose {choice!r}, which is not one of the options."
        return choice
