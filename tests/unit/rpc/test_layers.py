"""`rpc/` is layered (issue 38 §1, docs/call-path.md): transports < core < methods < dialects < contract. No module
imports a higher layer's, counting every import: module level, inside functions, under `TYPE_CHECKING`, `import x`
and relative forms. `rpc/client.py` (the client side) imports nothing of the daemon's layers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

RPC = Path(__file__).resolve().parents[3] / "rpc"
LAYERS = ("transports", "core", "methods", "dialects", "contract")


def _module(path: Path) -> str:
    parts = path.relative_to(RPC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in found if name.split(".")[0] == "rpc"}


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) < 2:
        return None
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else -1


@pytest.mark.req("R-ARCH-1")
def test_no_layer_of_rpc_imports_a_higher_one() -> None:
    upward = []
    for path in sorted(RPC.rglob("*.py")):
        source = _module(path)
        own = _layer(source)
        for target in sorted(_imports(path)):
            layer = _layer(target)
            if own is not None and layer is not None and layer > own:
                upward.append(f"{source} -> {target}")
    assert upward == []


@pytest.mark.req("R-ARCH-1")
def test_the_client_side_imports_nothing_of_the_daemon_s_layers() -> None:
    assert {name for name in _imports(RPC / "client.py") if _layer(name) is not None} == set()


def test_every_module_of_rpc_is_in_a_layer() -> None:
    loose = {_module(path) for path in RPC.glob("*.py")} - {"rpc", "rpc.client"}
    assert loose == set()
