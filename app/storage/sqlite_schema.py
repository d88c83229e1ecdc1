"""The SQLite schema at the newest revision, as the Alembic chain leaves it: a brand-new database is created from
these statements in one transaction (`app.storage.migrate.create_new_sqlite`) instead of running every migration,
which would import Alembic and SQLAlchemy at the daemon's first start (Alembic's "create, then stamp head" recipe,
with the schema frozen as SQL like Rails' `structure.sql`).

Generated; do not edit. `tests/unit/storage/test_storage_sqlite_schema.py` fails when this differs from what the
migrations produce; regenerate with `python -m app.storage.freeze_schema` after adding a migration.
"""

# ruff: noqa: E501  (generated: SQL lines as SQLite stores them)

from __future__ import annotations

__all__ = ["DUMP", "REVISION", "STATEMENTS"]

# A schema, here and in its test: every object SQLite did not make itself, in creation order.
DUMP = "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid"

REVISION = "0011"
STATEMENTS: tuple[str, ...] = (
    (
        "CREATE TABLE alembic_version (\n"
        "\tversion_num VARCHAR(32) NOT NULL, \n"
        "\tCONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)\n"
        ")"
    ),
    (
        "CREATE TABLE pairing_tokens (\n"
        "\ttoken_id VARCHAR(32) NOT NULL, \n"
        "\tuser VARCHAR(255) NOT NULL, \n"
        "\tlabel TEXT, \n"
        "\ttoken_sha256 VARCHAR(64) NOT NULL, \n"
        "\tcreated_at DATETIME NOT NULL, \n"
        "\tlast_used_at DATETIME, \n"
        "\trevoked_at DATETIME, \n"
        "\tCONSTRAINT pk_pairing_tokens PRIMARY KEY (token_id), \n"
        "\tCONSTRAINT uq_pairing_tokens_token_sha256 UNIQUE (token_sha256)\n"
        ")"
    ),
    (
        "CREATE TABLE acp_sessions (\n"
        "\tsession_id VARCHAR(255) NOT NULL, \n"
        "\towner VARCHAR(255) NOT NULL, \n"
        "\tagent_alias VARCHAR(255) NOT NULL, \n"
        "\tworkspace_dir TEXT NOT NULL, \n"
        "\tinteraction_surface VARCHAR(16) NOT NULL, \n"
        "\tcreated_at DATETIME NOT NULL, \n"
        "\tlast_activity DATETIME NOT NULL, \n"
        "\tclosed_at DATETIME, \n"
        "\tkilled_at DATETIME, \n"
        "\tnext_index INTEGER NOT NULL, title VARCHAR(80), title_fold VARCHAR(320), seq INTEGER DEFAULT 0 NOT NULL, model VARCHAR(255), temperature FLOAT, parent_id VARCHAR(255), forked_at INTEGER, \n"
        "\tCONSTRAINT pk_acp_sessions PRIMARY KEY (session_id), \n"
        "\tCONSTRAINT ck_acp_sessions_surface CHECK (interaction_surface IN ('rpc', 'gateway'))\n"
        ")"
    ),
    (
        "CREATE TABLE chat_sessions (\n"
        "\tsession_id VARCHAR(255) NOT NULL, \n"
        "\towner VARCHAR(255) NOT NULL, \n"
        "\tagent_alias VARCHAR(255) NOT NULL, \n"
        "\tworkspace_dir TEXT NOT NULL, \n"
        "\tinteraction_surface VARCHAR(16) NOT NULL, \n"
        "\tcreated_at DATETIME NOT NULL, \n"
        "\tlast_activity DATETIME NOT NULL, \n"
        "\tclosed_at DATETIME, \n"
        "\tkilled_at DATETIME, \n"
        "\tnext_index INTEGER NOT NULL, title VARCHAR(80), title_fold VARCHAR(320), seq INTEGER DEFAULT 0 NOT NULL, model VARCHAR(255), temperature FLOAT, parent_id VARCHAR(255), forked_at INTEGER, \n"
        "\tCONSTRAINT pk_chat_sessions PRIMARY KEY (session_id), \n"
        "\tCONSTRAINT ck_chat_sessions_surface CHECK (interaction_surface IN ('rpc', 'gateway'))\n"
        ")"
    ),
    (
        "CREATE TABLE acp_transcript (\n"
        "\tsession_id VARCHAR(255) NOT NULL, \n"
        "\tidx INTEGER NOT NULL, \n"
        "\trole VARCHAR(16) NOT NULL, \n"
        "\tcontent TEXT NOT NULL, \n"
        "\ttool_call_id VARCHAR(255), \n"
        "\tname VARCHAR(255), \n"
        "\tmarker VARCHAR(32), \n"
        "\tturn_id VARCHAR(64) NOT NULL, \n"
        "\tinteraction_surface VARCHAR(16) NOT NULL, \n"
        "\tcomplete BOOLEAN NOT NULL, \n"
        "\tcreated_at DATETIME NOT NULL, rolled_back BOOLEAN DEFAULT 0 NOT NULL, \n"
        "\tCONSTRAINT pk_acp_transcript PRIMARY KEY (session_id, idx), \n"
        "\tCONSTRAINT ck_acp_transcript_role CHECK (role IN ('user', 'assistant', 'thought', 'tool_call', 'tool_result', 'marker')), \n"
        "\tCONSTRAINT ck_acp_transcript_surface CHECK (interaction_surface IN ('rpc', 'gateway')), \n"
        "\tCONSTRAINT fk_acp_transcript_session_id_acp_sessions FOREIGN KEY(session_id) REFERENCES acp_sessions (session_id) ON DELETE CASCADE\n"
        ")"
    ),
    (
        "CREATE TABLE chat_messages (\n"
        "\tsession_id VARCHAR(255) NOT NULL, \n"
        "\tidx INTEGER NOT NULL, \n"
        "\trole VARCHAR(16) NOT NULL, \n"
        "\tcontent TEXT NOT NULL, \n"
        "\ttool_call_id VARCHAR(255), \n"
        "\tname VARCHAR(255), \n"
        "\tmarker VARCHAR(32), \n"
        "\tturn_id VARCHAR(64) NOT NULL, \n"
        "\tinteraction_surface VARCHAR(16) NOT NULL, \n"
        "\tcomplete BOOLEAN NOT NULL, \n"
        "\tcreated_at DATETIME NOT NULL, rolled_back BOOLEAN DEFAULT 0 NOT NULL, \n"
        "\tCONSTRAINT pk_chat_messages PRIMARY KEY (session_id, idx), \n"
        "\tCONSTRAINT ck_chat_messages_role CHECK (role IN ('user', 'assistant', 'thought', 'tool_call', 'tool_result', 'marker')), \n"
        "\tCONSTRAINT ck_chat_messages_surface CHECK (interaction_surface IN ('rpc', 'gateway')), \n"
        "\tCONSTRAINT fk_chat_messages_session_id_chat_sessions FOREIGN KEY(session_id) REFERENCES chat_sessions (session_id) ON DELETE CASCADE\n"
        ")"
    ),
    (
        "CREATE TABLE acp_turns (\n"
        "\tsession_id VARCHAR(255) NOT NULL, \n"
        "\tturn_id VARCHAR(64) NOT NULL, \n"
        "\tinteraction_surface VARCHAR(16) NOT NULL, \n"
        "\tfirst_index INTEGER NOT NULL, \n"
        "\tstarted_at DATETIME NOT NULL, \n"
        "\tfinished_at DATETIME, \n"
        "\tstop_reason VARCHAR(32), \n"
        "\tCONSTRAINT pk_acp_turns PRIMARY KEY (session_id, turn_id), \n"
        "\tCONSTRAINT ck_acp_turns_surface CHECK (interaction_surface IN ('rpc', 'gateway')), \n"
        "\tCONSTRAINT fk_acp_turns_session_id_acp_sessions FOREIGN KEY(session_id) REFERENCES acp_sessions (session_id) ON DELETE CASCADE\n"
        ")"
    ),
    (
        "CREATE TABLE acp_snapshots (\n"
        "\tsession_id VARCHAR(255) NOT NULL, \n"
        "\tsnapshot_id INTEGER NOT NULL, \n"
        "\tmessages TEXT NOT NULL, \n"
        "\tboundary INTEGER NOT NULL, \n"
        "\tinteraction_surface VARCHAR(16) NOT NULL, \n"
        "\tcreated_at DATETIME NOT NULL, \n"
        "\tCONSTRAINT pk_acp_snapshots PRIMARY KEY (session_id, snapshot_id), \n"
        "\tCONSTRAINT ck_acp_snapshots_surface CHECK (interaction_surface IN ('rpc', 'gateway')), \n"
        "\tCONSTRAINT fk_acp_snapshots_session_id_acp_sessions FOREIGN KEY(session_id) REFERENCES acp_sessions (session_id) ON DELETE CASCADE\n"
        ")"
    ),
    "CREATE INDEX ix_acp_transcript_open ON acp_transcript (session_id, turn_id) WHERE complete = 0",
    "CREATE INDEX ix_chat_messages_open ON chat_messages (session_id, turn_id) WHERE complete = 0",
    "CREATE INDEX ix_acp_turns_open ON acp_turns (session_id) WHERE finished_at IS NULL",
    "CREATE INDEX ix_acp_sessions_owner_activity ON acp_sessions (owner, last_activity, session_id)",
    "CREATE INDEX ix_acp_sessions_activity ON acp_sessions (last_activity, session_id)",
    "CREATE INDEX ix_chat_sessions_owner_activity ON chat_sessions (owner, last_activity, session_id)",
    "CREATE INDEX ix_chat_sessions_activity ON chat_sessions (last_activity, session_id)",
    (
        "CREATE TABLE chat_snapshots (\n"
        "\tsession_id VARCHAR(255) NOT NULL, \n"
        "\tsnapshot_id INTEGER NOT NULL, \n"
        "\tmessages TEXT NOT NULL, \n"
        "\tboundary INTEGER NOT NULL, \n"
        "\tinteraction_surface VARCHAR(16) NOT NULL, \n"
        "\tcreated_at DATETIME NOT NULL, \n"
        "\tCONSTRAINT pk_chat_snapshots PRIMARY KEY (session_id, snapshot_id), \n"
        "\tCONSTRAINT ck_chat_snapshots_surface CHECK (interaction_surface IN ('rpc', 'gateway')), \n"
        "\tCONSTRAINT fk_chat_snapshots_session_id_chat_sessions FOREIGN KEY(session_id) REFERENCES chat_sessions (session_id) ON DELETE CASCADE\n"
        ")"
    ),
    (
        "CREATE TABLE permission_rules (\n"
        "\trule_id VARCHAR(32) NOT NULL, \n"
        "\tprincipal VARCHAR(255) NOT NULL, \n"
        "\tagent_alias VARCHAR(255) NOT NULL, \n"
        "\tdecision VARCHAR(8) NOT NULL, \n"
        "\tpattern TEXT NOT NULL, \n"
        "\tcreated_at DATETIME NOT NULL, \n"
        "\tCONSTRAINT pk_permission_rules PRIMARY KEY (rule_id), \n"
        "\tCONSTRAINT ck_permission_rules_decision CHECK (decision IN ('allow', 'ask', 'deny'))\n"
        ")"
    ),
    "CREATE INDEX ix_permission_rules_principal_agent ON permission_rules (principal, agent_alias)",
    (
        "CREATE TABLE acp_turn_usage (\n"
        "\tsession_id VARCHAR(255) NOT NULL, \n"
        "\tidx INTEGER NOT NULL, \n"
        "\tturn_id VARCHAR(64) NOT NULL, \n"
        "\tprovider VARCHAR(255) NOT NULL, \n"
        "\tmodel VARCHAR(255), \n"
        "\tsteps INTEGER NOT NULL, \n"
        "\tinput_tokens INTEGER NOT NULL, \n"
        "\toutput_tokens INTEGER NOT NULL, \n"
        "\tcache_read_tokens INTEGER NOT NULL, \n"
        "\tcache_write_tokens INTEGER NOT NULL, \n"
        "\tcost_usd FLOAT, \n"
        "\tcreated_at DATETIME NOT NULL, \n"
        "\tCONSTRAINT pk_acp_turn_usage PRIMARY KEY (session_id, idx), \n"
        "\tCONSTRAINT fk_acp_turn_usage_session_id_acp_sessions FOREIGN KEY(session_id) REFERENCES acp_sessions (session_id) ON DELETE CASCADE\n"
        ")"
    ),
    (
        "CREATE TABLE chat_turn_usage (\n"
        "\tsession_id VARCHAR(255) NOT NULL, \n"
        "\tidx INTEGER NOT NULL, \n"
        "\tturn_id VARCHAR(64) NOT NULL, \n"
        "\tprovider VARCHAR(255) NOT NULL, \n"
        "\tmodel VARCHAR(255), \n"
        "\tsteps INTEGER NOT NULL, \n"
        "\tinput_tokens INTEGER NOT NULL, \n"
        "\toutput_tokens INTEGER NOT NULL, \n"
        "\tcache_read_tokens INTEGER NOT NULL, \n"
        "\tcache_write_tokens INTEGER NOT NULL, \n"
        "\tcost_usd FLOAT, \n"
        "\tcreated_at DATETIME NOT NULL, \n"
        "\tCONSTRAINT pk_chat_turn_usage PRIMARY KEY (session_id, idx), \n"
        "\tCONSTRAINT fk_chat_turn_usage_session_id_chat_sessions FOREIGN KEY(session_id) REFERENCES chat_sessions (session_id) ON DELETE CASCADE\n"
        ")"
    ),
)
# END OF GENERATED PART
