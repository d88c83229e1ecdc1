"""A daemon's question (`elicitation/create`, R-BIDI-5) as the interactive commands ask it at the terminal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["Question"]


@dataclass(frozen=True)
class Question:
    message: str
    field: str
    options: tuple[str, ...] | None

    KEYS: ClassVar[str] = "an empty line declines, Ctrl-D cancels"

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Question:
        schema = params.get("requestedSchema")
        properties = schema.get("properties") if isinstance(schema, dict) else None
        field, spec = next(iter(properties.items()), ("answer", {})) if isinstance(properties, dict) else ("answer", {})
        enum = spec.get("enum") if isinstance(spec, dict) else None
        options = tuple(str(o) for o in enum) if isinstance(enum, list) and enum else None
        return cls(str(params.get("message") or "?"), str(field), options)

    def text(self) -> str:
        return f"{self.message} [{' / '.join(self.options)}]" if self.options else self.message

    def retry_text(self) -> str:
        assert self.options is not None
        return f"not one of the options; choose one of: {' / '.join(self.options)} ({self.KEYS})"

    def answer(self, line: str | None) -> dict[str, Any] | None:
        """The elicitation result for what was typed (None = end of input), or None to ask again."""
        if line is None:
            return {"action": "cancel"}
        text = line.strip()
        if not text:
            return {"action": "decline"}
        if self.options is not None:
            chosen = self._choose(text)
            if chosen is None:
                return None
            text = chosen
        return {"action": "accept", "content": {self.field: text}}

    def _choose(self, text: str) -> str | None:
        assert self.options is not None
        if text in self.options:
            return text
        folded = [o for o in self.options if o.casefold() == text.casefold()]
        return folded[0] if len(folded) == 1 else None
