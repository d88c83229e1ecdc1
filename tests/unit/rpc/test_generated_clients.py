"""The typed clients generated from the OpenRPC document (R-ECO-3): the Python client package
(`clients/python/zeroclaw_client/_generated.py`) and the panel's TypeScript declarations (`web/zeroclaw.d.ts`) are
what `zeroclaw docs python-client|typescript` writes (CI fails on drift, as for docs/methods.md), their types are
real (mypy and tsc refuse a wrong call), and the panel's JavaScript passes `tsc --checkJs` against them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from js_tools import node_modules

from app.cli.docs_command import page, write_page
from rpc.contract.names import pascal, snake

pytestmark = pytest.mark.req("R-ECO-3")

REPO = Path(__file__).resolve().parents[3]
CLIENT = REPO / "clients" / "python"
GENERATED = CLIENT / "zeroclaw_client" / "_generated.py"
DECLARATIONS = REPO / "web" / "zeroclaw.d.ts"


def test_the_committed_python_client_is_the_generated_one() -> None:
    assert GENERATED.read_text(encoding="utf-8") == page("python-client"), (
        "run `zeroclaw docs python-client --output clients/python/zeroclaw_client/_generated.py`"
    )


def test_the_committed_typescript_declarations_are_the_generated_ones() -> None:
    assert DECLARATIONS.read_text(encoding="utf-8") == page("typescript"), (
        "run `zeroclaw docs typescript --output web/zeroclaw.d.ts`"
    )


@pytest.mark.parametrize("name", ["python-client", "typescript"])
def test_docs_check_fails_on_a_client_that_differs(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "client"
    assert write_page(name, str(out)) == 0
    assert write_page(name, None, check=str(out)) == 0
    out.write_text(out.read_text().replace("session_prompt", "session_prompted").replace("session/prompt", "x", 1))
    assert write_page(name, None, check=str(out)) == 1
    assert f"run `zeroclaw docs {name} --output" in capsys.readouterr().err


def test_names_of_methods_and_params() -> None:
    assert pascal("session/list-acp") == "SessionListAcp" and pascal("rpc.discover") == "RpcDiscover"
    assert snake("session/list-acp") == "session_list_acp" and snake("sessionId") == "session_id"
    assert snake("file/upload/begin") == "file_upload_begin" and snake("size_bytes") == "size_bytes"


def test_the_python_client_has_a_typed_method_per_rpc_method() -> None:
    text = GENERATED.read_text(encoding="utf-8")
    assert "    async def session_prompt(self, *, session_id: str, prompt: str, " in text
    assert ") -> SessionPromptResult:" in text and 'SessionPromptResult: TypeAlias = "PromptResult"' in text
    assert "    async def rpc_discover(self) -> RpcDiscoverResult:" in text
    assert "    def on_session_update(" in text and "    def on_elicitation_create(" in text
    assert 'LogEvent = TypedDict("LogEvent", {' in text  # `@timestamp` is no identifier


def test_the_typescript_declarations_map_every_method() -> None:
    text = DECLARATIONS.read_text(encoding="utf-8")
    assert '  "session/prompt": { params: SessionPromptParams; result: SessionPromptResult };' in text
    assert "export type SessionPromptResult = PromptResult;" in text
    assert '  "session/update": SessionUpdateParams;' in text
    assert '  "@timestamp": string;' in text


GOOD_USE = """\
from zeroclaw_client import ZeroclawClient, answer_approvals, connect_unix
from zeroclaw_client.types import ApprovalRequestUpdate, SessionApproveParamsDecision, SessionUpdateParams


async def opened() -> int:
    async with await connect_unix() as client:
        return (await client.status())["connections"]


async def use(client: ZeroclawClient) -> str:
    opened = await client.session_new(agent_alias="default")
    answer = await client.session_prompt(session_id=opened["sessionId"], prompt="hi")
    page = await client.session_messages(session_id=opened["sessionId"])
    assert isinstance(page["total"], int)

    def on_update(update: SessionUpdateParams) -> None:
        if update["type"] == "agent_message_chunk":
            print(update["text"].upper())

    async def decide(request: ApprovalRequestUpdate) -> SessionApproveParamsDecision:
        return "allow_once" if request["toolName"] == "bash" else "reject"

    client.on_session_update(on_update)
    answer_approvals(client, decide)
    return answer["content"] + answer["stopReason"]
"""

BAD_USE = """\
from zeroclaw_client import ZeroclawClient


async def use(client: ZeroclawClient) -> None:
    await client.session_prompt(session_id=1, prompt="hi")
    await client.session_new(agent="default")
    answer = await client.session_prompt(session_id="s", prompt="hi")
    answer["stop_reason"]
    await client.session_approve(session_id="s", request_id="r", decision="maybe")
"""


def _mypy(tmp_path: Path, code: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "use.py").write_text(code, encoding="utf-8")
    command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy")]
    command += ["--config-file", "", str(CLIENT / "zeroclaw_client"), str(tmp_path / "use.py")]
    env = {"PATH": "/usr/bin:/bin"}
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)


def test_mypy_strict_passes_the_package_and_a_right_use_and_refuses_a_wrong_one(tmp_path: Path) -> None:
    good = _mypy(tmp_path, GOOD_USE)
    assert good.returncode == 0, good.stdout
    bad = _mypy(tmp_path, BAD_USE)
    assert bad.returncode == 1, bad.stdout
    errors = [line for line in bad.stdout.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["5", "6", "8", "9"], bad.stdout
    assert 'Argument "session_id" to "session_prompt" of "ZeroclawClient" has incompatible type "int"' in bad.stdout
    assert 'Unexpected keyword argument "agent"' in bad.stdout
    assert '"PromptResult" has no key "stop_reason"' in bad.stdout


def _tsc(project: Path) -> subprocess.CompletedProcess[str]:
    tsc = node_modules() / "typescript" / "bin" / "tsc"
    node = shutil.which("node")
    assert node is not None, "node is not on PATH"
    command = [node, str(tsc), "-p", project.name]
    return subprocess.run(command, capture_output=True, text=True, cwd=project.parent, timeout=300, check=False)


def test_the_panel_passes_tsc_check_js_against_the_declarations() -> None:
    done = _tsc(REPO / "web" / "tsconfig.json")
    assert done.returncode == 0, done.stdout + done.stderr


def test_tsc_refuses_a_panel_call_that_breaks_the_contract(tmp_path: Path) -> None:
    """The same checks over a copy of the panel with one wrong call: the method map is what tsc checks against."""
    web = tmp_path / "web"
    shutil.copytree(REPO / "web", web)
    lines = [
        'import { call } from "./connection.js";',
        'export const a = call("session/prompt", { sessionId: 1, prompt: "hi" });',
        'export const b = call("session/prompted", { sessionId: "s" });',
        'export const c = call("session/new", {}).then((opened) => opened.sessionIdd);',
        'export const d = call("session/prompt");',  # its params are required
        'export const e = call("status").then((status) => status.connections);',  # none required: left out
    ]
    (web / "wrong.js").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = _tsc(web / "tsconfig.json")
    assert done.returncode != 0
    errors = sorted(line.split(":")[0] for line in done.stdout.splitlines() if "error TS" in line)
    assert errors == ["wrong.js(2,43)", "wrong.js(3,23)", "wrong.js(4,66)", "wrong.js(5,18)"], done.stdout


def test_a_client_notification_is_sent_unanswered_and_typed_void() -> None:
    """A method without a result (a notification the client sends) is generated too: Python sends it without an
    id and returns None; TypeScript's map gives it a `void` result."""
    from rpc.contract import python_client, typescript
    from rpc.contract.openrpc import openrpc_document
    from rpc.core.registry import Contract, NoParams
    from rpc.methods import build_registry

    registry = build_registry()
    registry.method("test/notice", params=NoParams, grant=None, contract=Contract("A notice", None))(
        lambda ctx, params: None
    )
    document = openrpc_document(registry, version="test")
    python = python_client.render(document)
    assert "    async def test_notice(self) -> TestNoticeResult:" in python
    assert "TestNoticeResult: TypeAlias = None\n" in python
    assert '        await self._notify("test/notice", {}, {})' in python
    assert "export type TestNoticeResult = void;" in typescript.render(document)


def test_no_generated_name_is_declared_twice() -> None:
    """A component's name and a method's `<Method>Params`/`<Method>Result` never meet (a second declaration would
    silently replace the first in Python and fail in TypeScript)."""
    import ast
    import re
    from collections import Counter

    tree = ast.parse(GENERATED.read_text(encoding="utf-8"))
    python = Counter(
        target.id if isinstance(target, ast.Name) else ""
        for node in tree.body
        for target in (
            [node.target] if isinstance(node, ast.AnnAssign) else node.targets if isinstance(node, ast.Assign) else []
        )
    )
    python.update(node.name for node in tree.body if isinstance(node, ast.ClassDef))
    assert [name for name, count in python.items() if count > 1 and name != "__all__"] == []
    typescript = Counter(re.findall(r"^export (?:interface|type) (\w+)", DECLARATIONS.read_text(), re.MULTILINE))
    assert [name for name, count in typescript.items() if count > 1] == []
