"""ACP prompt content (R-EDIT-3): `ContentBlock[]` as the one prompt text a turn takes.

`text` blocks are the user's words; a `resource_link` is named with its URI; an embedded text `resource` (the
editor's selection or file, `embeddedContext`) is quoted in a `<context>` element with its URI. Images, audio and
binary resources are refused (`-32602`): the agent's capabilities say `image:false, audio:false`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rpc.core.errors import InvalidParams

__all__ = ["prompt_text"]


def prompt_text(blocks: Sequence[Mapping[str, Any]]) -> str:
    if not blocks:
        raise _refused("prompt", "too_short", "The prompt holds no content block")
    return "\n".join(_block_text(i, block) for i, block in enumerate(blocks))


def _block_text(index: int, block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    field = f"prompt.{index}"
    if kind == "text":
        return _string(block, "text", field)
    if kind == "resource_link":
        uri, name = _string(block, "uri", field), _string(block, "name", field)
        return f"[{name}]({uri})"
    if kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, Mapping) or not isinstance(resource.get("text"), str):
            raise _refused(f"{field}.resource", "unsupported_content", "Only text resources are supported")
        source = resource.get("uri")
        return f'<context uri="{source if isinstance(source, str) else ""}">\n{resource["text"]}\n</context>'
    shown = kind if isinstance(kind, str) else "unknown"
    raise _refused(f"{field}.type", "unsupported_content", f"Content blocks of type {shown[:32]!r} are not supported")


def _string(block: Mapping[str, Any], key: str, field: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise _refused(f"{field}.{key}", "type_error", "Expected a string")
    return value


def _refused(field: str, kind: str, message: str) -> InvalidParams:
    return InvalidParams(message, errors=[{"field": field, "type": kind, "message": message}])
