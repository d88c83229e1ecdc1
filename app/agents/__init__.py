"""Providers (the model) and built-in tools that a turn drives; the seams live in `app.agents.base`.

    build_provider(provider_config, model=...)  -> Provider       (app/agents/providers/)
    build_tools(names)                          -> {name: Tool}   (app/agents/tools/)

Import the concrete modules directly; this package keeps its import light (no httpx) on purpose.
"""

from __future__ import annotations

from app.agents.base import (
    Elicitation,
    Message,
    PromptingClient,
    Provider,
    ProviderError,
    ProviderEvent,
    TextChunks,
    TextDelta,
    ThoughtDelta,
    Tool,
    ToolCall,
    ToolContext,
    ToolSpec,
    Usage,
)

__all__ = [
    "Elicitation",
    "Message",
    "PromptingClient",
    "Provider",
    "ProviderError",
    "ProviderEvent",
    "TextChunks",
    "TextDelta",
    "ThoughtDelta",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolSpec",
    "Usage",
]
