"""No import cycle of any kind in `rpc/`, `app/` or `gateway/` (issue 38 §2, R-ARCH-1).

Counted the strict way, from the source with `ast`: imports at module level, inside functions and under
`if TYPE_CHECKING:` alike; `import a.b` and `from a import b` (where `b` may be a submodule), relative or absolute.
Importing `a.b.c` imports the packages `a` and `a.b` first, so it is an edge to each of them too, and a package's
`__init__` that imports its children has an edge to each. The one edge left out is a module's edge to its own
enclosing packages: `a.b.c` cannot be imported before `a.b` has begun, whatever it writes, so `from a.b import d`
inside `a.b.c` adds no dependency on `a.b` that was not there already (it still counts on `a.b.d`, and on `a.b`'s
own names when it imports one of those).

A group of modules that reach each other (a strongly connected component) is a cycle; the target is none. A failure
prints each group with the import lines (file:line) that tie it together.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "rpc", "gateway")


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    where: str  # "path:line"


def module_files() -> dict[str, Path]:
    """Every module of the three packages by dotted name (`a/b/__init__.py` is `a.b`)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _ancestors(name: str) -> list[str]:
    """`a.b.c` → [`a`, `a.b`]."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: set[str]) -> dict[str, bool]:
    """The modules one import statement loads, each with whether the statement needs its own names (True) or
    only loads it on the way to a submodule (False)."""
    found: dict[str, bool] = {}

    def add(name: str, named: bool) -> None:
        found[name] = found.get(name, False) or named

    if isinstance(node, ast.Import):
        for alias in node.names:
            for parent in _ancestors(alias.name):
                add(parent, False)
            add(alias.name, True)
        return found
    if node.level:
        package = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{node.module}" if node.module else package
    else:
        base = node.module or ""
    for parent in _ancestors(base):
        add(parent, False)
    for alias in node.names:
        child = f"{base}.{alias.name}"
        if child in modules:  # `from a import b` with `b` a submodule
            add(base, False)
            add(child, True)
        else:  # a name defined in `base` itself, or `*`
            add(base, True)
    return found


def import_graph() -> list[Edge]:
    files = module_files()
    modules = set(files)
    edges: list[Edge] = []
    for module, path in files.items():
        is_package = path.name == "__init__.py"
        own = set(_ancestors(module))
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            for target, named in _imported(node, module, is_package, modules).items():
                if target in modules and target != module and (named or target not in own):
                    edges.append(Edge(module, target, where))
    return edges


def strongly_connected(nodes: set[str], edges: list[Edge]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; only the groups of two or more modules (a module never imports itself here)."""
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for edge in edges:
        succ[edge.source].append(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(nodes):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(succ[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(succ[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


def describe(groups: list[list[str]], edges: list[Edge]) -> str:
    lines = [f"{len(groups)} import cycle group(s):"]
    for group in groups:
        members = set(group)
        lines.append(f"- {', '.join(group)}")
        for edge in sorted(edges, key=lambda e: (e.source, e.target, e.where)):
            if edge.source in members and edge.target in members:
                lines.append(f"    {edge.source} -> {edge.target}  ({edge.where})")
    return "\n".join(lines)


def cycle_groups() -> tuple[list[list[str]], list[Edge]]:
    edges = import_graph()
    return strongly_connected(set(module_files()), edges), edges


@pytest.mark.req("R-ARCH-1")
def test_no_import_cycle_in_rpc_app_or_gateway_counting_every_kind_of_import() -> None:
    groups, edges = cycle_groups()
    assert not groups, describe(groups, edges)


def _graph_of(sources: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    for name, text in sources.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path)
    return cycle_groups()[0]


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        pytest.param(  # the shape of issue 38's rpc cycle: a package __init__, `import x`, a function-level import
            {
                "rpc/__init__.py": "",
                "rpc/methods/__init__.py": "from rpc.methods import lifecycle\n",
                "rpc/methods/lifecycle.py": "import rpc.zerocode\n",
                "rpc/zerocode.py": "def f():\n    from rpc.methods import build\n",
            },
            [["rpc.methods", "rpc.methods.lifecycle", "rpc.zerocode"]],
            id="init-and-function-level",
        ),
        pytest.param(
            {
                "app/__init__.py": "",
                "app/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
                "app/b.py": "from . import a\n",
            },
            [["app.a", "app.b"]],
            id="type-checking-and-relative",
        ),
        pytest.param(  # importing `app.x.y` runs `app.x`, whose __init__ imports what imports the importer
            {
                "app/__init__.py": "",
                "app/x/__init__.py": "from app.z import Z\n",
                "app/x/y.py": "",
                "app/z.py": "import app.x.y\n",
            },
            [["app.x", "app.z"]],
            id="parent-package-edge",
        ),
        pytest.param(  # a package's __init__ importing its children, which import each other one way: no cycle
            {
                "gateway/__init__.py": "",
                "gateway/p/__init__.py": "from .a import A\nfrom gateway.p.b import B\n",
                "gateway/p/a.py": "from gateway.p import b\n",
                "gateway/p/b.py": "",
            },
            [],
            id="package-reexports-children",
        ),
        pytest.param(  # ... but a child that needs a name its package's __init__ defines is in a cycle with it
            {
                "gateway/__init__.py": "",
                "gateway/p/__init__.py": "from .a import A\nLIMIT = 1\n",
                "gateway/p/a.py": "def f():\n    from . import LIMIT\n",
            },
            [["gateway.p", "gateway.p.a"]],
            id="child-needs-its-package-names",
        ),
    ],
)
def test_the_counter_sees_every_kind_of_edge(
    sources: dict[str, str], expected: list[list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _graph_of(sources, tmp_path, monkeypatch) == expected


@pytest.mark.req("R-GW-2")
def test_the_openapi_document_sits_above_the_rest_routes_it_describes() -> None:
    """gateway/openapi/ reads the routes' bodies; gateway/rest/ never reaches back (the old cycle, issue 38)."""
    edges = import_graph()
    upward = [e for e in edges if e.source.startswith("gateway.rest") and e.target.startswith("gateway.openapi")]
    assert upward == []
    assert any(e.source == "gateway.openapi.paths" and e.target == "gateway.rest.pairing" for e in edges)
