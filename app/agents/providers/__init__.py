"""Model providers (R-MODEL-1), one module per concept:

    table.py      the kinds (`scripted`, `openai`, `anthropic`) and `build_provider`
    http.py       what the remote kinds share: the streamed POST, retries before the first token, failure sentences
    openai.py     any OpenAI-compatible `/v1/chat/completions` server
    anthropic.py  the Anthropic Messages API
    models.py     `list_models`: each provider's `GET /v1/models`, cached (R-MODEL-3)

This package imports nothing heavy (no httpx): the daemon imports it at start-up, a kind's module on first use.
"""

from __future__ import annotations

from app.agents.providers.table import KINDS, build_provider

__all__ = ["KINDS", "build_provider"]
