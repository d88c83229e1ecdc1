"""`config/*` over a real socket against a real daemon (R-CFG-1..5, R-AUTH-5).

One daemon for the module, started from a hand-written config.toml with comments and unknown keys. Tests that
write restore what they changed (or touch keys no other test reads), so they do not depend on their order.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from typing import Any

import pytest
from e2e_harness import Daemon, DaemonFactory
from session_client import Peer, pair

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

SECRET = "sk-e2e-SECRET-4242-do-not-leak"
BAD_VALUE = "VALUE-THAT-MUST-NOT-BE-ECHOED"

CONFIG = """\
# zeroclaw e2e config: this header comment must survive every write
future_top_level = "kept verbatim"   # an unknown key from a newer version

[limits]
max_connections = 500  # inline comment on a known key
mystery_limit = 7      # unknown key inside a known table

[future_section]
# a whole unknown table
answer = 42

[permission_profiles.limited]
# may write agent settings only
grants = { config = ["read", "update"], sessions = ["read"] }
config_write_paths = ["agents.*"]

[permission_profiles.reader]
grants = { config = ["read"], sessions = ["read"] }

[permission_profiles.sessions_only]
grants = { sessions = ["read"] }

[users.carol]
permission_profiles = ["limited"]

[users.dave]
permission_profiles = ["reader"]

[users.erin]
permission_profiles = ["sessions_only"]
"""


@pytest.fixture(scope="module")
def cfg_daemon() -> Iterator[Daemon]:
    factory = DaemonFactory()
    try:
        yield factory.start(CONFIG)
    finally:
        factory.close()


def config_bytes(d: Daemon) -> bytes:
    assert d.config_dir is not None
    return (d.config_dir / "config.toml").read_bytes()


async def owner_of(d: Daemon) -> Peer:
    peer = await Peer.open(d)
    return peer


async def user_peer(d: Daemon, owner: Peer, user: str) -> Peer:
    token = (await pair(owner, user))["token"]
    return await Peer.open(d, token=token)


async def get(peer: Peer, prop: str) -> Any:
    result = await peer.call("config/get", {"prop": prop})
    assert result["prop"] == prop, result
    return result["value"]


# ------------------------------------------------------------------------------------------ set-many


@pytest.mark.req("R-CFG-2")
async def test_set_many_spec_example_exactly(cfg_daemon: Daemon) -> None:
    async with await owner_of(cfg_daemon) as owner:
        # "after creating the profile `operator`"
        created = await owner.call(
            "config/set", {"prop": "permission_profiles.operator.grants", "value": {"sessions": ["read"]}}
        )
        assert created == {"prop": "permission_profiles.operator.grants", "set": True}
        response = await owner.request(
            "config/set-many",
            {
                "sets": [
                    {"prop": "users.example.uid", "value": 1001},
                    {"prop": "users.example.permission_profiles", "value": ["operator"]},
                ]
            },
            id=2,
        )
        assert response == {
            "jsonrpc": "2.0",
            "id": 2,
            "result": {"props": ["users.example.uid", "users.example.permission_profiles"], "set": True},
        }
        assert await get(owner, "users.example.uid") == 1001
        assert await get(owner, "users.example.permission_profiles") == ["operator"]
        assert await get(owner, "permission_profiles.operator.grants") == {"sessions": ["read"]}
        text = config_bytes(cfg_daemon).decode()
        assert "[users.example]" in text and "1001" in text


@pytest.mark.req("R-CFG-2")
async def test_set_many_props_deduplicated_in_request_order_later_wins(cfg_daemon: Daemon) -> None:
    async with await owner_of(cfg_daemon) as owner:
        result = await owner.call(
            "config/set-many",
            {
                "sets": [
                    {"prop": "tools.output_limit_bytes", "value": 4096},
                    {"prop": "context.max_chars", "value": 150000},
                    {"prop": "tools.output_limit_bytes", "value": 8192},
                    {"prop": "context.max_chars", "value": 160000},
                    {"prop": "tools.bash_timeout_secs", "value": 30},
                ]
            },
        )
        assert result == {
            "props": ["tools.output_limit_bytes", "context.max_chars", "tools.bash_timeout_secs"],
            "set": True,
        }
        assert await get(owner, "tools.output_limit_bytes") == 8192
        assert await get(owner, "context.max_chars") == 160000
        assert await get(owner, "tools.bash_timeout_secs") == 30
        for prop in ("tools.output_limit_bytes", "context.max_chars", "tools.bash_timeout_secs"):
            await owner.call("config/delete", {"prop": prop})


INVALID_BATCHES: list[tuple[str, list[Any], int, str | None]] = [
    (
        "missing_value",
        [{"prop": "limits.max_sessions", "value": 5}, {"prop": "limits.max_connections"}],
        1,
        None,
    ),
    (
        "not_an_object",
        [{"prop": "limits.max_sessions", "value": 5}, "limits.max_connections"],
        1,
        None,
    ),
    (
        "unknown_prop",
        [
            {"prop": "limits.max_sessions", "value": 5},
            {"prop": "limits.max_connections", "value": 321},
            {"prop": "limits.no_such_key", "value": 1},
        ],
        2,
        "unknown_prop",
    ),
    (
        "unknown_entry_key",
        [{"prop": "limits.max_sessions", "value": 5}, {"prop": "agents.default.no_such_field", "value": "x"}],
        1,
        "unknown_prop",
    ),
    (
        "bad_type",
        [{"prop": "limits.max_connections", "value": 321}, {"prop": "limits.max_sessions", "value": BAD_VALUE}],
        1,
        None,
    ),
    (
        "int_as_string",
        [{"prop": "limits.max_connections", "value": 321}, {"prop": "limits.max_sessions", "value": "5"}],
        1,
        None,
    ),
    (
        "constraint",
        [
            {"prop": "limits.max_connections", "value": 321},
            {"prop": "limits.max_sessions", "value": 6},
            {"prop": "tools.ask_timeout_secs", "value": -1},
        ],
        2,
        None,
    ),
]


@pytest.mark.req("R-CFG-2")
@pytest.mark.parametrize(
    ("batch", "index", "etype"), [c[1:] for c in INVALID_BATCHES], ids=[c[0] for c in INVALID_BATCHES]
)
async def test_set_many_invalid_entry_names_its_index_and_changes_nothing(
    cfg_daemon: Daemon, batch: list[Any], index: int, etype: str | None
) -> None:
    async with await owner_of(cfg_daemon) as owner:
        before_file = config_bytes(cfg_daemon)
        before = {p: await get(owner, p) for p in ("limits.max_sessions", "limits.max_connections")}
        response = await owner.request("config/set-many", {"sets": batch})
        assert "error" in response, response
        err = response["error"]
        assert err["code"] == -32602, err
        assert err["data"]["kind"] == "invalid_params", err
        assert err["data"]["index"] == index, err
        assert isinstance(err["data"].get("errors"), list) and err["data"]["errors"], err
        if etype is not None:
            assert any(e.get("type") == etype for e in err["data"]["errors"]), err
        assert BAD_VALUE not in json.dumps(response), "errors must never echo values (R-WIRE-4)"
        # nothing staged before the bad entry was applied, live or persisted
        assert config_bytes(cfg_daemon) == before_file
        assert {p: await get(owner, p) for p in before} == before


@pytest.mark.req("R-CFG-2")
@pytest.mark.parametrize(
    "sets",
    [{"prop": "limits.max_sessions", "value": 1}, [], [{"prop": "limits.max_sessions", "value": 1}] * 257, None],
    ids=["object", "empty", "too_many", "null"],
)
async def test_set_many_malformed_batch_has_no_index(cfg_daemon: Daemon, sets: Any) -> None:
    async with await owner_of(cfg_daemon) as owner:
        before_file = config_bytes(cfg_daemon)
        code, data = await owner.error("config/set-many", {"sets": sets})
        assert code == -32602, data
        assert "index" not in data, data
        assert config_bytes(cfg_daemon) == before_file


@pytest.mark.req("R-CFG-2")
async def test_set_many_256_entries_is_accepted(cfg_daemon: Daemon) -> None:
    async with await owner_of(cfg_daemon) as owner:
        sets = [{"prop": "agents.default.max_turn_steps", "value": 1 + i % 20} for i in range(256)]
        result = await owner.call("config/set-many", {"sets": sets})
        assert result == {"props": ["agents.default.max_turn_steps"], "set": True}
        assert await get(owner, "agents.default.max_turn_steps") == 1 + 255 % 20
        await owner.call("config/delete", {"prop": "agents.default.max_turn_steps"})
        assert await get(owner, "agents.default.max_turn_steps") == 16


# ------------------------------------------------------------------------------------- authorization


@pytest.mark.req("R-CFG-3")
@pytest.mark.parametrize(
    ("batch", "index", "prop"),
    [
        (
            [
                {"prop": "agents.default.model", "value": "carol-model"},
                {"prop": "limits.max_sessions", "value": 3},
                {"prop": "agents.default.system_prompt", "value": "hi"},
            ],
            1,
            "limits.max_sessions",
        ),
        (
            # authorization is judged before staging: the forbidden path wins over a later invalid value
            [
                {"prop": "agents.default.model", "value": "carol-model"},
                {"prop": "users.carol.permission_profiles", "value": ["reader"]},
                {"prop": "agents.default.max_turn_steps", "value": "not an int"},
            ],
            1,
            "users.carol.permission_profiles",
        ),
        ([{"prop": "limits.max_sessions", "value": 3}], 0, "limits.max_sessions"),
    ],
    ids=["middle", "before_invalid_value", "first"],
)
async def test_set_many_forbidden_path_rejects_whole_batch(
    cfg_daemon: Daemon, batch: list[dict[str, Any]], index: int, prop: str
) -> None:
    async with await owner_of(cfg_daemon) as owner:
        carol = await user_peer(cfg_daemon, owner, "carol")
        async with carol:
            before_file = config_bytes(cfg_daemon)
            code, data = await carol.error("config/set-many", {"sets": batch})
            assert code == -32012, data
            assert data["kind"] == "forbidden", data
            assert data["index"] == index, data
            assert data["prop"] == prop, data
            assert config_bytes(cfg_daemon) == before_file, "a rejected batch must leave config.toml byte-identical"
            assert await get(owner, "agents.default.model") is None
            assert await get(owner, "limits.max_sessions") == 64


@pytest.mark.req("R-CFG-3")
async def test_limited_user_may_write_its_allowed_paths(cfg_daemon: Daemon) -> None:
    async with await owner_of(cfg_daemon) as owner:
        carol = await user_peer(cfg_daemon, owner, "carol")
        async with carol:
            result = await carol.call(
                "config/set-many",
                {"sets": [{"prop": "agents.default.model", "value": "carol-model"}]},
            )
            assert result == {"props": ["agents.default.model"], "set": True}
            assert await get(carol, "agents.default.model") == "carol-model"
            code, data = await carol.error("config/set", {"prop": "limits.max_sessions", "value": 3})
            assert code == -32012, data
            assert data["prop"] == "limits.max_sessions", data
            code, data = await carol.error("config/delete", {"prop": "limits.max_connections"})
            assert code == -32012, data
            await carol.call("config/delete", {"prop": "agents.default.model"})
            assert await get(owner, "agents.default.model") is None


@pytest.mark.req("R-CFG-3")
@pytest.mark.req("R-AUTH-5")
async def test_lacking_config_update_names_the_grant(cfg_daemon: Daemon) -> None:
    async with await owner_of(cfg_daemon) as owner:
        dave = await user_peer(cfg_daemon, owner, "dave")
        async with dave:
            before_file = config_bytes(cfg_daemon)
            for method, params in [
                ("config/set-many", {"sets": [{"prop": "agents.default.model", "value": "m"}]}),
                ("config/set", {"prop": "agents.default.model", "value": "m"}),
                ("config/delete", {"prop": "agents.default.model"}),
            ]:
                code, data = await dave.error(method, params)
                assert code == -32012, (method, data)
                assert data["grant"] == "config:update", (method, data)
            assert config_bytes(cfg_daemon) == before_file
            # config:read is enough to read (masked)
            assert await get(dave, "limits.max_connections") == 500
        erin = await user_peer(cfg_daemon, owner, "erin")
        async with erin:
            code, data = await erin.error("config/get", {"prop": "limits.max_connections"})
            assert code == -32012, data
            assert data["grant"] == "config:read", data


# --------------------------------------------------------------------------------------------- reading


@pytest.mark.req("R-CFG-1")
async def test_secrets_are_masked_everywhere(cfg_daemon: Daemon) -> None:
    async with await owner_of(cfg_daemon) as owner:
        assert await owner.call("config/set", {"prop": "providers.x.api_key", "value": SECRET}) == {
            "prop": "providers.x.api_key",
            "set": True,
        }
        assert await get(owner, "providers.x.api_key") == "***"
        provider = await get(owner, "providers.x")
        assert provider["api_key"] == "***", provider
        assert provider["kind"] == "scripted", provider  # the entry was created with defaults
        whole = await owner.call("config/get")
        assert whole["providers"]["x"]["api_key"] == "***", whole["providers"]
        assert whole["providers"]["scripted"]["api_key"] is None  # unset reads as null
        assert whole["limits"]["max_connections"] == 500
        assert "future_top_level" not in whole and "future_section" not in whole  # unknown keys are invisible
        dave = await user_peer(cfg_daemon, owner, "dave")
        async with dave:
            assert await get(dave, "providers.x.api_key") == "***"
            dave_view = await dave.call("config/get")
        for frame in [*owner.frames, *dave.frames, dave_view]:
            assert SECRET not in json.dumps(frame)
        assert SECRET not in cfg_daemon.stderr, "secrets are never logged (R-CFG-5)"
        if cfg_daemon.audit_path.exists():
            assert SECRET not in cfg_daemon.audit_path.read_text()
        await owner.call("config/delete", {"prop": "providers.x"})
        code, data = await owner.error("config/get", {"prop": "providers.x"})
        assert code == -32602, data


@pytest.mark.req("R-CFG-1")
async def test_config_set_validates_type_and_path(cfg_daemon: Daemon) -> None:
    async with await owner_of(cfg_daemon) as owner:
        before_file = config_bytes(cfg_daemon)
        for params in [
            {"prop": "limits.max_sessions", "value": BAD_VALUE},
            {"prop": "limits.max_sessions", "value": True},
            {"prop": "limits.max_sessions", "value": 1.5},
            {"prop": "limits.nope", "value": 1},
            {"prop": "future_top_level", "value": "x"},  # unknown keys are refused by config/set
            {"prop": "limits..max_sessions", "value": 1},
        ]:
            response = await owner.request("config/set", params)
            assert "error" in response, (params, response)
            assert response["error"]["code"] == -32602, (params, response)
            assert response["error"]["data"]["errors"], response
            assert BAD_VALUE not in json.dumps(response)
        assert config_bytes(cfg_daemon) == before_file
        assert await get(owner, "limits.max_sessions") == 64


# --------------------------------------------------------------------------------------------- writing


@pytest.mark.req("R-CFG-5")
async def test_write_preserves_comments_and_unknown_keys_and_is_0600(cfg_daemon: Daemon) -> None:
    assert cfg_daemon.config_dir is not None
    path = cfg_daemon.config_dir / "config.toml"
    async with await owner_of(cfg_daemon) as owner:
        await owner.call("config/set", {"prop": "limits.max_pending_client_requests", "value": 9})
        text = path.read_text()
        for kept in [
            "# zeroclaw e2e config: this header comment must survive every write",
            'future_top_level = "kept verbatim"   # an unknown key from a newer version',
            "max_connections = 500  # inline comment on a known key",
            "mystery_limit = 7      # unknown key inside a known table",
            "[future_section]",
            "# a whole unknown table",
            "answer = 42",
            "# may write agent settings only",
        ]:
            assert kept in text, f"lost {kept!r}:\n{text}"
        assert "max_pending_client_requests = 9" in text, text
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        leftovers = [p.name for p in cfg_daemon.config_dir.iterdir() if p.name.endswith(".tmp")]
        assert leftovers == [], leftovers
        assert await get(owner, "limits.max_pending_client_requests") == 9
        await owner.call("config/delete", {"prop": "limits.max_pending_client_requests"})
        text = path.read_text()
        assert "max_pending_client_requests" not in text
        assert "mystery_limit = 7" in text and "# zeroclaw e2e config" in text
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.req("R-CFG-5")
async def test_first_write_creates_a_0600_file(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    cfg = root / "cfg"
    cfg.mkdir(mode=0o700)
    (cfg / "config.toml").write_text("# wide open\n[limits]\nmax_sessions = 10\n")
    os.chmod(cfg / "config.toml", 0o644)
    d = daemon_factory.start(root=root, config_dir=cfg)
    async with await Peer.open(d) as owner:
        await owner.call("config/set", {"prop": "limits.max_sessions", "value": 11})
    assert stat.S_IMODE((cfg / "config.toml").stat().st_mode) == 0o600
    text = (cfg / "config.toml").read_text()
    assert text.startswith("# wide open\n") and "max_sessions = 11" in text, text


@pytest.mark.req("R-CFG-1")
async def test_config_delete_resets_to_default(cfg_daemon: Daemon) -> None:
    async with await owner_of(cfg_daemon) as owner:
        await owner.call("config/set", {"prop": "limits.max_uploads_per_connection", "value": 2})
        assert await get(owner, "limits.max_uploads_per_connection") == 2
        result = await owner.call("config/delete", {"prop": "limits.max_uploads_per_connection"})
        assert result == {"prop": "limits.max_uploads_per_connection", "deleted": True}
        assert await get(owner, "limits.max_uploads_per_connection") == 4
        assert "max_uploads_per_connection" not in config_bytes(cfg_daemon).decode()
        # deleting what is not set succeeds
        again = await owner.call("config/delete", {"prop": "limits.max_uploads_per_connection"})
        assert again == {"prop": "limits.max_uploads_per_connection", "deleted": True}
        # an entry path removes the entry
        await owner.call("config/set", {"prop": "users.temp.uid", "value": 4321})
        assert (await get(owner, "users.temp"))["uid"] == 4321
        assert await owner.call("config/delete", {"prop": "users.temp"}) == {"prop": "users.temp", "deleted": True}
        code, data = await owner.error("config/get", {"prop": "users.temp"})
        assert code == -32602, data
        assert "[users.temp]" not in config_bytes(cfg_daemon).decode()


# -------------------------------------------------------------------------------------- live policy


@pytest.mark.req("R-AUTH-5")
async def test_policy_change_applies_to_an_open_connection_at_its_next_call(cfg_daemon: Daemon) -> None:
    async with await owner_of(cfg_daemon) as owner:
        erin = await user_peer(cfg_daemon, owner, "erin")
        async with erin:
            assert (await erin.call("session/list"))["sessions"] == []
            # the owner removes erin's profile: her very next call is judged by the new policy
            await owner.call("config/set", {"prop": "users.erin.permission_profiles", "value": []})
            code, data = await erin.error("session/list")
            assert code == -32012, data
            assert data["grant"] == "sessions:read", data
            # and giving it back works the same way
            await owner.call("config/set", {"prop": "users.erin.permission_profiles", "value": ["sessions_only"]})
            assert (await erin.call("session/list"))["sessions"] == []
            # removing the profile itself (not the user's reference to it) also takes effect at once
            await owner.call("config/delete", {"prop": "permission_profiles.sessions_only"})
            code, data = await erin.error("session/list")
            assert code == -32012, data
            await owner.call(
                "config/set", {"prop": "permission_profiles.sessions_only.grants", "value": {"sessions": ["read"]}}
            )
            assert (await erin.call("session/list"))["sessions"] == []


@pytest.mark.req("R-AUTH-5")
async def test_granting_config_update_applies_at_the_next_call(cfg_daemon: Daemon) -> None:
    async with await owner_of(cfg_daemon) as owner:
        dave = await user_peer(cfg_daemon, owner, "dave")
        async with dave:
            code, data = await dave.error("config/set", {"prop": "agents.default.system_prompt", "value": "x"})
            assert code == -32012 and data["grant"] == "config:update", data
            await owner.call(
                "config/set-many",
                {
                    "sets": [
                        {"prop": "permission_profiles.reader.grants", "value": {"config": ["read", "update"]}},
                        {"prop": "permission_profiles.reader.config_write_paths", "value": ["agents.default.*"]},
                    ]
                },
            )
            try:
                assert await dave.call("config/set", {"prop": "agents.default.system_prompt", "value": "x"}) == {
                    "prop": "agents.default.system_prompt",
                    "set": True,
                }
                await dave.call("config/delete", {"prop": "agents.default.system_prompt"})
            finally:
                await owner.call(
                    "config/set-many",
                    {
                        "sets": [
                            {
                                "prop": "permission_profiles.reader.grants",
                                "value": {"config": ["read"], "sessions": ["read"]},
                            },
                            {"prop": "permission_profiles.reader.config_write_paths", "value": []},
                        ]
                    },
                )
            code, data = await dave.error("config/set", {"prop": "agents.default.system_prompt", "value": "x"})
            assert code == -32012 and data["grant"] == "config:update", data
