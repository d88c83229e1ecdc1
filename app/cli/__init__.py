"""`zeroclaw` command line (SPEC §12). The composition root for every command."""

from __future__ import annotations

import argparse
import asyncio
import gc
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from app import __version__

__all__ = ["main"]

LOG_LEVELS = ("debug", "info", "warning", "error")
CONFIG_DIR_HELP = "config dir (default: $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)"


class _VersionAction(argparse.Action):
    """`--version`: the package version, and exit."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kwargs: Any) -> NoReturn:
        print(f"zeroclaw {__version__}")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zeroclaw", description="The zeroclaw daemon and its clients.")
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    # `--config-dir` before or after the command; SUPPRESS: a subcommand keeps the value given before.
    parser.add_argument("--config-dir", metavar="DIR", default=None, help=CONFIG_DIR_HELP)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config-dir", metavar="DIR", default=argparse.SUPPRESS, help=CONFIG_DIR_HELP)
    sub = parser.add_subparsers(dest="command", required=True)

    daemon = sub.add_parser("daemon", parents=[common], help="run the daemon in the foreground")
    daemon.add_argument("--ephemeral", action="store_true", help="exit about 1 s after the last client leaves")
    daemon.add_argument("--no-gateway", action="store_true", help="serve the local endpoint only")
    daemon.add_argument("--gateway-port", type=int, metavar="N", help="gateway port (0 = any free port)")
    daemon.add_argument("--log-level", choices=LOG_LEVELS, default="info", help="stderr log level (default info)")
    daemon.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="stderr log format (default text)"
    )

    rpc = sub.add_parser("rpc", parents=[common], help="call one method, or an interactive line client")
    rpc.add_argument("method", nargs="?", help="method name; omit for the interactive client")
    rpc.add_argument("params", nargs="?", help="params as a JSON object")
    rpc.add_argument("--list", action="store_true", help="list the methods the daemon serves, and exit")

    sub.add_parser("status", parents=[common], help="print the daemon's status")

    docs = sub.add_parser("docs", help="print a reference page generated from this version (no daemon needed)")
    docs.add_argument(
        "page",
        choices=["methods", "openrpc", "python-client", "typescript"],
        help="methods: docs/methods.md; openrpc: the document; python-client: "
        "clients/python/zeroclaw_client/_generated.py; typescript: web/zeroclaw.d.ts",
    )
    docs.add_argument("--output", metavar="FILE", help="write the page to FILE instead of stdout")
    docs.add_argument("--check", metavar="FILE", help="exit 1 if FILE differs from the page (for CI)")

    pair = sub.add_parser("pair", parents=[common], help="create a pairing token for a user")
    pair.add_argument("--user", required=True, metavar="NAME", help="the [users.NAME] the token acts as")
    pair.add_argument("--label", help="a note shown by pairing/list")
    pair.add_argument("--code", action="store_true", help="issue a one-time 6-digit code for POST /pair instead")

    chat = sub.add_parser("chat", parents=[common], help="chat with an agent in the terminal")
    chat.add_argument("--session", metavar="ID", help="resume this session")
    chat.add_argument("--create", action="store_true", help="with --session: create it when no session has that id")
    chat.add_argument("--agent", metavar="A", default="default", help="agent alias (default: default)")

    acp = sub.add_parser("acp", parents=[common], help="an Agent Client Protocol agent on stdio, for editors")
    acp.add_argument("--agent", metavar="ALIAS", default=None, help="the agent of new sessions (default: default)")

    upload = sub.add_parser(
        "upload", parents=[common], help="upload a file to a session (in chunks, with a progress bar)"
    )
    upload.add_argument("session", metavar="SESSION", help="the session id")
    upload.add_argument("file", metavar="FILE", help="the file to upload")

    db = sub.add_parser("db", parents=[common], help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    db_sub.add_parser("upgrade", parents=[common], help="apply the Alembic migrations")
    copy = db_sub.add_parser(
        "copy", parents=[common], help="copy every row into an empty database (e.g. SQLite to PostgreSQL)"
    )
    copy.add_argument("--from", dest="source", metavar="URL", help="source database (default: the configured one)")
    copy.add_argument("--to", dest="target", metavar="URL", required=True, help="target database; must hold no rows")
    _service_parser(sub, common)
    return parser


def _service_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """`zeroclaw service install|uninstall` (R-SVC-3, docs/operations.md)."""
    service = sub.add_parser("service", parents=[common], help="user units for systemd (or a launchd agent)")
    service_sub = service.add_subparsers(dest="service_command", required=True)
    install = service_sub.add_parser(
        "install", parents=[common], help="write zeroclaw.service (and zeroclaw.socket) to ~/.config/systemd/user"
    )
    install.add_argument(
        "--socket-activation", action="store_true", help="also zeroclaw.socket: started by the first connect"
    )
    install.add_argument(
        "--persistent",
        action="store_true",
        help="with --socket-activation: keep running after the last client (default: exit when idle)",
    )
    install.add_argument("--watchdog-sec", type=int, default=0, metavar="N", help="WatchdogSec= (default 0: none)")
    install.add_argument("--print", dest="print_only", action="store_true", help="print the files, write nothing")
    install.add_argument("--launchd", action="store_true", help="a macOS LaunchAgent plist instead")
    uninstall = service_sub.add_parser("uninstall", parents=[common], help="remove the files install wrote")
    uninstall.add_argument("--launchd", action="store_true", help="the macOS LaunchAgent plist instead")


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.command == "daemon":
        from app.log_format import configure as configure_logging

        configure_logging(args.log_level, args.log_format)
        # No cyclic GC while start-up makes what lives as long as the process (docs/limits.md, "Garbage"):
        # `app.daemon._after_ready` freezes it and turns GC back on; `finally`: a start that fails first.
        gc.disable()
        try:
            from app.daemon import DaemonOptions, run

            options = DaemonOptions(
                config_dir=args.config_dir,
                ephemeral=args.ephemeral,
                gateway=not args.no_gateway,
                gateway_port=args.gateway_port,
            )
            raise SystemExit(run(options))
        finally:
            gc.enable()

    from app.cli.terminal import EXIT_INTERRUPTED, CliError, StdoutClosed, ignore_interrupts, leave_quietly, say

    interrupted = "zeroclaw: interrupted"
    if args.command == "upload":
        interrupted = "zeroclaw: upload interrupted; nothing was attached (run the same command again to upload it)"
    try:
        raise SystemExit(_client_command(args)())
    except CliError as exc:
        say(exc.message)
        raise SystemExit(exc.code) from None
    except StdoutClosed:  # `zeroclaw rpc … | head`: not an error worth a word, as for `cat`
        raise SystemExit(leave_quietly()) from None
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback (R-CLI); chat and rpc handle their own
        ignore_interrupts()
        say(f"\n{interrupted}")
        raise SystemExit(EXIT_INTERRUPTED) from None


def _client_command(args: argparse.Namespace) -> Callable[[], int]:
    """The command to run for `args` (every one but `daemon`), returning its exit status."""
    config_dir: str | None = args.config_dir
    if args.command == "rpc" and args.list:
        from app.cli.rpc_command import list_methods

        return lambda: asyncio.run(list_methods(config_dir))
    if args.command == "docs":
        from app.cli.docs_command import write_page

        return lambda: write_page(args.page, args.output, check=args.check)
    if args.command == "rpc" and args.method is None:
        from app.cli.rpc_command import interactive

        return lambda: interactive(config_dir)
    if args.command in ("rpc", "status"):
        from app.cli.rpc_command import one_shot

        method, params = (args.method, args.params) if args.command == "rpc" else ("status", None)
        return lambda: asyncio.run(one_shot(config_dir, method, params))
    if args.command == "pair":
        from app.cli.admin_commands import pair

        return lambda: asyncio.run(pair(config_dir, args.user, args.label, code=args.code))
    if args.command == "db" and args.db_command == "copy":
        from app.cli.admin_commands import db_copy

        return lambda: db_copy(config_dir, args.source, args.target)
    if args.command == "db":
        from app.cli.admin_commands import db_upgrade

        return lambda: db_upgrade(config_dir)
    if args.command == "upload":
        from app.cli.upload_command import upload

        return lambda: asyncio.run(upload(config_dir, args.session, args.file))
    if args.command == "acp":
        from app.cli.acp_command import bridge

        return lambda: bridge(config_dir, args.agent)
    if args.command == "chat":
        from app.cli.chat_command import chat

        return lambda: chat(config_dir, args.session, args.agent, create=args.create)
    if args.command == "service" and args.service_command == "install":
        from app.cli.service_command import install

        return lambda: install(
            config_dir,
            socket_activation=args.socket_activation,
            print_only=args.print_only,
            launchd=args.launchd,
            watchdog_secs=args.watchdog_sec,
            persistent=args.persistent,
        )
    if args.command == "service":
        from app.cli.service_command import uninstall

        return lambda: uninstall(launchd=args.launchd)
    raise AssertionError(f"unhandled command {args.command!r}")


if __name__ == "__main__":
    main()
