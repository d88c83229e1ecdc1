"""`provider_safe` and `sanitize_snapshot` were rewritten for speed (a turn runs them over the whole retained
context, up to `[context] max_messages`); these properties pin them to the straightforward versions they replaced."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.sessions.store.replay import provider_safe, sanitize_snapshot

_REASONING_KEYS = frozenset({"reasoning", "reasoning_content", "thinking", "thought"})


def _call_id(call: Any) -> str:
    if isinstance(call, Mapping) and isinstance(call.get("id"), str):
        return str(call["id"])
    return ""


def reference_provider_safe(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    pending: dict[str, tuple[int, int]] = {}
    answered: set[tuple[int, int]] = set()
    answering: set[int] = set()
    for i, message in enumerate(messages):
        if message.get("role") == "assistant":
            for j, call in enumerate(message.get("tool_calls") or ()):
                if _call_id(call):
                    pending[_call_id(call)] = (i, j)
        elif message.get("role") == "tool":
            call = pending.pop(message.get("tool_call_id") or "", None)
            if call is not None:
                answered.add(call)
                answering.add(i)
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            copy = dict(message)
            calls = [call for j, call in enumerate(message.get("tool_calls") or ()) if (i, j) in answered]
            if calls:
                copy["tool_calls"] = calls
            else:
                copy.pop("tool_calls", None)
                if not copy.get("content"):
                    continue
            out.append(copy)
        elif role == "tool":
            if i not in answering:
                continue
            out.append(dict(message))
        else:
            out.append(dict(message))
    return out


def reference_sanitize(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    kept: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise ValueError("snapshot messages must be objects with a string 'role'")
        if message["role"] in ("system", "developer"):
            continue
        kept.append({key: value for key, value in message.items() if key not in _REASONING_KEYS})
    return kept


ids = st.sampled_from(["tc_1", "tc_2", "tc_3", "", None, 7])
calls = st.lists(
    st.one_of(st.fixed_dictionaries({"id": ids, "type": st.just("function")}), st.just("not a call")), max_size=3
)
message = st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "content": st.sampled_from(["", "hi"])}),
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": st.sampled_from(["", "ok", None])},
        optional={"tool_calls": st.one_of(calls, st.none()), "reasoning": st.just("secret")},
    ),
    st.fixed_dictionaries(
        {"role": st.just("tool"), "content": st.just("out")}, optional={"tool_call_id": ids, "name": st.just("bash")}
    ),
    st.fixed_dictionaries({"role": st.sampled_from(["system", "developer"]), "content": st.just("be nice")}),
    st.fixed_dictionaries({"role": st.just("user"), "content": st.just("x"), "thinking": st.just("hm")}),
)


@given(st.lists(message, max_size=25))
@settings(max_examples=400, deadline=None)
def test_provider_safe_equals_the_reference(messages: list[dict[str, Any]]) -> None:
    assert provider_safe(messages) == reference_provider_safe(messages)


@given(st.lists(message, max_size=25))
@settings(max_examples=400, deadline=None)
def test_sanitize_snapshot_equals_the_reference(messages: list[dict[str, Any]]) -> None:
    assert sanitize_snapshot(messages) == reference_sanitize(messages)


@pytest.mark.parametrize("bad", [["not a mapping"], [{"content": "no role"}], [{"role": 3}]])
def test_sanitize_snapshot_refuses_what_the_reference_refuses(bad: list[Any]) -> None:
    with pytest.raises(ValueError):
        reference_sanitize(bad)
    with pytest.raises(ValueError):
        sanitize_snapshot(bad)
