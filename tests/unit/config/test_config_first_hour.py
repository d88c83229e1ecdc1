"""What a new user meets first in config.toml (issue 29 §4): a TOML error says what is wrong, and a name that
points at nothing is warned about at load and at reload, without stopping anything."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pytest
from test_config_reload import _config, edit  # a new file renamed over the old one, as an editor does

from app.config import toml_file
from app.config.errors import ConfigFileError
from app.config.schema import dangling_references
from app.config.store import ConfigStore

SECRET = "sk-first-hour-SECRET"


def allow(_props: Sequence[str]) -> None:
    return None


# -- §4.1: a TOML error says where and what -------------------------------------------------------------------


@pytest.mark.req("R-CFG-5")
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[limits\nmax_sessions = 1\n", "at line 1, column 8: Expected ']' at the end of a table declaration"),
        ("max_sessions = = 1\n", "at line 1, column 16: Invalid value"),
        ("[limits]\nmax_sessions = 1\nmax_sessions = 2\n", "at line 3, column 17: Cannot overwrite a value"),
        ("tools = [1,\n", "at the end of the file: Invalid value"),
    ],
)
def test_invalid_toml_says_where_and_what(tmp_path: Path, text: str, message: str) -> None:
    """issue 29 §4.1: the parser's reason follows the position."""
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigFileError) as info:
        toml_file.load(path)
    assert info.value.message == f"invalid TOML {message}"


@pytest.mark.req("R-SEC-6")
def test_invalid_toml_reason_never_quotes_a_value(tmp_path: Path) -> None:
    """issue 29 §4.1: an unterminated secret is named by its position and the character that ended it, never its
    text."""
    path = tmp_path / "config.toml"
    path.write_text(f'[providers.p]\napi_key = "{SECRET}\n')
    with pytest.raises(ConfigFileError) as info:
        toml_file.load(path)
    assert info.value.message == "invalid TOML at line 2, column 32: Illegal character '\\n'"
    assert SECRET not in info.value.message


# -- §4.6: names that point at nothing ------------------------------------------------------------------------

DANGLING = """\
[users.me]
permission_profiles = ["admin", "operatr"]

[permission_profiles.admin]
admin = true

[agents.helper]
provider = "lokal"
"""

PROFILE_WARNING = (
    'users.me.permission_profiles: no profile "operatr"; '
    "it grants nothing until it is added under [permission_profiles]"
)
PROVIDER_WARNING = 'agents.helper.provider: no provider "lokal"; its prompts fail until it is added under [providers]'


def test_dangling_references_name_the_key_and_the_missing_entry() -> None:
    """issue 29 §4.6: a profile and a provider that do not exist, each named by its key path."""
    assert dangling_references(_config(DANGLING)) == [PROFILE_WARNING, PROVIDER_WARNING]
    assert dangling_references(_config("")) == []


@pytest.mark.req("R-CFG-5")
def test_dangling_references_are_warned_at_load_and_the_config_still_loads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """issue 29 §4.6: a warning naming the key, not an error (a user may be written before its profile)."""
    (tmp_path / "config.toml").write_text(DANGLING)
    with caplog.at_level(logging.WARNING, logger="app.config"):
        store = ConfigStore(tmp_path)
    assert store.current.users["me"].permission_profiles == ["admin", "operatr"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    path = tmp_path / "config.toml"
    assert warnings == [f"{path}: {PROFILE_WARNING}", f"{path}: {PROVIDER_WARNING}"]


@pytest.mark.req("R-CFG-6")
async def test_dangling_references_are_warned_at_reload_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """issue 29 §4.6: a reload (or a write) that leaves a name pointing at nothing warns about it; one that
    changes something else does not repeat it."""
    (tmp_path / "config.toml").write_text("")
    store = ConfigStore(tmp_path)
    with caplog.at_level(logging.WARNING, logger="app.config"):
        edit(store, DANGLING)
        assert (await store.reload()).changed
        first = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        caplog.clear()
        edit(store, DANGLING + "\n[limits]\nmax_sessions = 3\n")
        assert (await store.reload()).changed == ("limits.max_sessions",)
        again = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        await store.delete("permission_profiles.admin", authorize=allow)
        deleted = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert first == [f"{store.path}: {PROFILE_WARNING}", f"{store.path}: {PROVIDER_WARNING}"]
    assert again == []
    assert deleted == [f'{store.path}: users.me.permission_profiles: no profile "admin"; '
                       "it grants nothing until it is added under [permission_profiles]"]  # fmt: skip
