"""Count the sleeps written directly in test bodies (issue 38 §4); `python tests/sleep_count.py [-v]`.

Counted: every call whose name ends in `sleep` (`time.sleep(`, `asyncio.sleep(`, `anyio.sleep(`, `provider._sleep(`)
written in the body of a test function (`test_*`) or a fixture in a `test_*.py` file under `tests/`, not in a
function nested inside it. A wait for an event goes through `tests/waiting.py` or the e2e harness instead; what
remains is where time is the behaviour, with a comment saying why. `tests/unit/test_test_waits.py` pins the
ceiling. `-v` lists them; the second number printed counts every sleep call in `tests/`, helpers included.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def callee(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def is_sleep(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and callee(node.func).endswith("sleep")


def is_test_body(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    if fn.name.startswith("test_"):
        return True
    return any(callee(d.func if isinstance(d, ast.Call) else d) == "fixture" for d in fn.decorator_list)


def direct_sleeps(node: ast.AST) -> list[ast.Call]:
    """The sleep calls under `node`, not descending into nested functions or lambdas."""
    found: list[ast.Call] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if is_sleep(child):
            found.append(child)  # type: ignore[arg-type]
        found += direct_sleeps(child)
    return found


def files_of_tests(root: Path = TESTS) -> list[Path]:
    return sorted(p for p in root.rglob("test_*.py") if "node_modules" not in p.parts)


def sleeps_in_test_bodies(root: Path = TESTS) -> list[tuple[Path, int, str]]:
    """(file, line, test or fixture name) of every sleep written directly in a test body."""
    found: list[tuple[Path, int, str]] = []
    for path in files_of_tests(root):
        tree = ast.parse(path.read_text(), str(path))
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and is_test_body(fn):
                found += [(path, call.lineno, fn.name) for call in direct_sleeps(fn)]
    return sorted(found)


def all_sleeps(root: Path = TESTS) -> int:
    """Every sleep call in `tests/`, helpers and harness included (for information)."""
    total = 0
    for path in sorted(p for p in root.rglob("*.py") if "node_modules" not in p.parts):
        total += sum(1 for node in ast.walk(ast.parse(path.read_text(), str(path))) if is_sleep(node))
    return total


def main(argv: list[str]) -> int:
    found = sleeps_in_test_bodies()
    if "-v" in argv:
        for path, line, name in found:
            print(f"{path.relative_to(TESTS.parent)}:{line}  {name}")
    print(f"{len(found)} sleeps written directly in test bodies; {all_sleeps()} sleep calls in tests/ in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
