"""`ask_user`: a free-form question to the prompting client via `elicitation/create` (R-AGENT-3, R-BIDI-5)."""

from __future__ import annotations

from typing import Any

from app.agents.base import Elicitation, ToolContext, ToolSpec
from app.agents.tools._common import elicitation_outcome, invalid, string_argument

__all__ = ["AskUserTool", "answer_schema"]


def answer_schema(question: str) -> dict[str, Any]:
    """The form R-BIDI-5 prescribes: one required string `answer`, titled with the question."""
    return {
        "type": "object",
        "properties": {"answer": {"type": "string", "title": question}},
        "required": ["answer"],
    }


async def elicit(context: ToolContext, question: str, schema: dict[str, Any]) -> Elicitation:
    # The channel promises not to raise; a broken one still must not fail the turn (R-BIDI-4).
    try:
        return await context.client.elicit(question, schema, timeout=context.ask_timeout_secs)
    except Exception as exc:
        return Elicitation(action="failed", reason=type(exc).__name__)


class AskUserTool:
    spec = ToolSpec(
        name="ask_user",
        description=(
            "Ask the user a question and wait for a free-form answer. The result is the answer, or a sentence "
            "saying the user declined, cancelled, did not answer in time, or that no interactive client is attached."
        ),
        parameters={
            "type": "object",
            "properties": {"question": {"type": "string", "description": "The question to show the user."}},
            "required": ["question"],
        },
    )
    needs_approval = False

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> str:
        question = string_argument(arguments, "question")
        if question is None:
            return invalid(arguments, "a non-empty string `question`")
        outcome = await elicit(context, question, answer_schema(question))
        if outcome.action != "accept":
            return elicitation_outcome(outcome, context.ask_timeout_secs)
        answer = outcome.content.get("answer")
        if answer is None or isinstance(answer, dict | list):
            return "No answer: the client accepted but sent no `answer` text."
        text = answer if isinstance(answer, str) else str(answer)  # a client that sent 42 for "42"
        return text if text else "The user gave an empty answer."
