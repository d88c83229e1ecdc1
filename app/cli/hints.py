"""What to do next, for each error the CLI can meet (SPEC R-CLI: "errors name what to do next")."""

from __future__ import annotations

import os
from typing import Any

from app.paths import resolve

__all__ = ["config_dir_flag", "error_line", "hint_for", "no_daemon"]


def config_dir_flag(config_dir: str | None) -> str:
    """` --config-dir DIR` when the person gave one, so a suggested command reaches the same instance."""
    return f" --config-dir {config_dir}" if config_dir else ""


def no_daemon(config_dir: str | None, endpoint: str, reason: str) -> str:
    return (
        f"zeroclaw: no daemon is answering at {endpoint} ({reason}); "
        f"start it with `zeroclaw daemon{config_dir_flag(config_dir)}` and try again"
    )


def _error_kinds(error: dict[str, Any]) -> set[str]:
    data = error.get("data") or {}
    return {str(e.get("type")) for e in data.get("errors", []) if isinstance(e, dict)}


def hint_for(error: dict[str, Any], config_dir: str | None, *, meant: str | None = None) -> str | None:
    """One sentence on what to do about a JSON-RPC error answer, or None when the message says it all (`meant`:
    the method name closest to the one called, for a method not found)."""
    code = error.get("code")
    data: dict[str, Any] = error.get("data") or {}
    kinds = _error_kinds(error)
    flag = config_dir_flag(config_dir)
    config_file = resolve(config_dir).config_file
    if code == -32010:
        uid = os.getuid() if hasattr(os, "getuid") else "<your uid>"
        return (
            f"the daemon does not know uid {uid}: add `[users.NAME] uid = {uid}` with a permission "
            f"profile to {config_file} (the daemon picks the edit up), or pass a paired token"
        )
    if code == -32012:
        grant = data.get("grant")
        need = f"the grant `{grant}`" if grant else "this permission"
        return f"your permission profile lacks {need}; an admin can add it under [permission_profiles] in {config_file}"
    if code == -32000:
        return f"list your sessions with `zeroclaw rpc{flag} session/list`"
    if code == -32001:
        return (
            "close sessions you no longer need (`zeroclaw rpc session/close '{\"sessionId\": …}'`) "
            "or raise [limits] max_sessions"
        )
    if code == -32002:
        return "wait for the running turn to end, or cancel it with `zeroclaw rpc session/cancel '{\"sessionId\": …}'`"
    if code == -32003:
        return "the session belongs to another user; start your own with `zeroclaw chat`"
    if code == -32601:
        listing = f"`zeroclaw rpc{flag} --list` lists the methods this daemon serves"
        return f"did you mean `{meant}`? {listing}" if meant else listing
    if code == -32005:
        return "see docs/limits.md for the limit and its [limits] key"
    if code == -32602 and "unknown_user" in kinds:
        return (
            f"add the user to {config_file} first (`[users.NAME]` with `permission_profiles`, see docs/config.md); "
            "the running daemon picks the edit up"
        )
    return None


def error_line(error: dict[str, Any], config_dir: str | None, *, meant: str | None = None) -> str:
    """`zeroclaw: <message> (<code>); <hint>` for stderr."""
    hint = hint_for(error, config_dir, meant=meant)
    line = f"zeroclaw: {error.get('message', 'error')} ({error.get('code')})"
    return f"{line}; {hint}" if hint else line
