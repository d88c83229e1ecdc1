"""`zeroclaw` command line (SPEC §12). The composition root for every command."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence

__all__ = ["main"]

LOG_LEVELS = ("debug", "info", "warning", "error")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zeroclaw", description="The zeroclaw daemon and its clients.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config-dir", metavar="DIR", help="config dir (default: $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")
    sub = parser.add_subparsers(dest="command", required=True)

    daemon = sub.add_parser("daemon", parents=[common], help="run the daemon in the foreground")
    daemon.add_argument("--ephemeral", action="store_true", help="exit about 1 s after the last client leaves")
    daemon.add_argument("--no-gateway", action="store_true", help="serve the local endpoint only")
    daemon.add_argument("--gateway-port", type=int, metavar="N", help="gateway port (0 = any free port)")
    daemon.add_argument("--log-level", choices=LOG_LEVELS, default="info", help="stderr log level (default info)")

    rpc = sub.add_parser("rpc", parents=[common], help="call one method, or an interactive line client")
    rpc.add_argument("method", nargs="?", help="method name; omit for the interactive client")
    rpc.add_argument("params", nargs="?", help="params as a JSON object")

    sub.add_parser("status", parents=[common], help="print the daemon's status")

    pair = sub.add_parser("pair", parents=[common], help="create a pairing token for a user")
    pair.add_argument("--user", required=True, metavar="NAME", help="the [users.NAME] the token acts as")
    pair.add_argument("--label", help="a note shown by pairing/list")
    pair.add_argument("--code", action="store_true", help="issue a one-time 6-digit code for POST /pair instead")

    chat = sub.add_parser("chat", parents=[common], help="chat with an agent in the terminal")
    chat.add_argument("--session", metavar="ID", help="resume (or choose) this session id")
    chat.add_argument("--agent", metavar="A", default="default", help="agent alias (default: default)")

    upload = sub.add_parser("upload", parents=[common], help="upload a file to a session (chunked, resumable)")
    upload.add_argument("session", metavar="SESSION", help="the session id")
    upload.add_argument("file", metavar="FILE", help="the file to upload")

    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    db_sub.add_parser("upgrade", parents=[common], help="apply the Alembic migrations")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.command == "daemon":
        logging.basicConfig(
            level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
        )
        logging.getLogger("alembic").setLevel(max(logging.WARNING, logging.getLogger().level))
        from app.daemon import DaemonOptions, run

        options = DaemonOptions(
            config_dir=args.config_dir,
            ephemeral=args.ephemeral,
            gateway=not args.no_gateway,
            gateway_port=args.gateway_port,
        )
        raise SystemExit(run(options))

    from app.cli import rpc_command as client_commands

    if args.command == "rpc" and args.method is None:
        raise SystemExit(asyncio.run(client_commands.interactive(args.config_dir)))
    if args.command == "rpc":
        raise SystemExit(asyncio.run(client_commands.one_shot(args.config_dir, args.method, args.params)))
    if args.command == "status":
        raise SystemExit(asyncio.run(client_commands.one_shot(args.config_dir, "status", None)))
    if args.command == "pair":
        from app.cli.admin_commands import pair

        raise SystemExit(asyncio.run(pair(args.config_dir, args.user, args.label, code=args.code)))
    if args.command == "db":
        from app.cli.admin_commands import db_upgrade

        raise SystemExit(db_upgrade(args.config_dir))
    if args.command == "upload":
        from app.cli.upload_command import upload

        raise SystemExit(asyncio.run(upload(args.config_dir, args.session, args.file)))
    if args.command == "chat":
        from app.cli.chat_command import chat

        raise SystemExit(asyncio.run(chat(args.config_dir, args.session, args.agent)))


if __name__ == "__main__":
    main()
