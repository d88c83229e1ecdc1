"""A config value that is never shown: `repr`, `str` and every config answer mask it (R-SEC-6)."""

from __future__ import annotations

from typing import final

__all__ = ["Secret"]


@final
class Secret:
    """A string held for the code that needs it (`get_secret_value()`), masked everywhere else. Two secrets are
    equal when their values are, so a config diff notices a changed key without showing either."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return "Secret('**********')"

    __str__ = __repr__
