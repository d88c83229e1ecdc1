"""The repository is self-contained and declares what it imports (R-PKG-1, R-PKG-3).

* every `R-…` id named anywhere in the tree is defined in `docs/spec.md`, the copy of the contract readers have;
* README and docs link to nothing outside the repository, and every relative link resolves;
* no build artefact, archive or stray binary is tracked;
* every third-party module the code imports is a declared dependency: the runtime packages in
  `[project] dependencies`, what the tests and benchmarks import in `[dev]` (a fresh venv once failed at
  collection on an undeclared `cryptography` that the machine's site-packages had hidden).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REQ_ID = re.compile(r"\bR-[A-Z]+(?:-\d+)?\b")
LINK = re.compile(r"\]\(([^)\s]+)\)")
TEXT_SUFFIXES = {".py", ".md", ".js", ".html", ".css", ".toml", ".c", ".ini", ".mako", ".txt", ".yaml", ".svg"}
BINARY_SUFFIXES = {".whl", ".egg", ".zip", ".gz", ".tgz", ".bz2", ".xz", ".so", ".dylib", ".dll", ".exe", ".pyc"}
TRACKED_BINARIES = {"docs/panel-chat.png"}  # the README's screenshot

# Import name → distribution name, where they differ.
DISTRIBUTION_OF = {"yaml": "pyyaml", "acp": "agent-client-protocol", "opentelemetry": "opentelemetry-sdk"}
# Imported only as a transitive part of a declared package's own API, or installed by the OS.
PROVIDED_BY = {"greenlet": "sqlalchemy[asyncio]", "pydantic": "mcp"}  # the test MCP server's elicitation schema
# Modules of an optional extra, each imported at run time by one module alone (imported only when the feature is
# on): that file → the extra that must declare its third-party imports.
OPTIONAL_FILES = {"app/telemetry/otel.py": "otel"}  # OpenTelemetry (R-MODEL-6)
CLIENT = "clients/python"  # the generated Python client: a package of its own, with its own pyproject.toml (R-ECO-3)


def tracked_files() -> list[str]:
    if not (ROOT / ".git").exists():
        pytest.fail("not a git checkout: the repository checks need `git ls-files`")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name and (ROOT / name).is_file()]


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0].lower() for req in requirements}


# Directories whose code runs in a virtualenv of its own (tests/py_tools.py), its imports declared by the
# requirements file beside it rather than by pyproject.toml.
OWN_VENVS = ("tests/litellm",)


def third_party_imports(directories: list[str], local: set[str]) -> dict[str, str]:
    """Top-level modules imported by the Python files under `directories` (but those of `OWN_VENVS` and
    `OPTIONAL_FILES` unless they are asked for), with one file importing each."""
    found: dict[str, str] = {}
    for directory in directories:
        for path in sorted((ROOT / directory).rglob("*.py")) if (ROOT / directory).is_dir() else [ROOT / directory]:
            own = next((d for d in OWN_VENVS if path.is_relative_to(ROOT / d)), None)
            if own is not None and own != directory:
                continue
            relative = str(path.relative_to(ROOT))
            if relative in OPTIONAL_FILES and relative != directory:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in local:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def local_modules() -> set[str]:
    """Packages of this project (the daemon's; the generated client's, clients/python), and the helper modules tests
    import by file name (conftest's sys.path)."""
    names = {"app", "rpc", "gateway", "migrations", "zeroclaw_client"}
    for directory in ("tests", "benchmarks", ".ci"):
        names |= {path.stem for path in (ROOT / directory).rglob("*.py")}
    return names


@pytest.mark.req("R-PKG-3")
def test_every_requirement_id_is_defined_in_docs_spec() -> None:
    defined = set(REQ_ID.findall((ROOT / "docs" / "spec.md").read_text(encoding="utf-8")))
    undefined: dict[str, str] = {}
    for name in tracked_files():
        if name == "docs/spec.md" or Path(name).suffix not in TEXT_SUFFIXES:
            continue
        for req in REQ_ID.findall((ROOT / name).read_text(encoding="utf-8", errors="replace")):
            if req not in defined:
                undefined.setdefault(req, name)
    assert not undefined, f"ids named but not defined in docs/spec.md: {undefined}"


@pytest.mark.req("R-PKG-3")
def test_readme_and_docs_link_only_inside_the_repository() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md"]
    broken = []
    for page in pages:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "#", "mailto:")):
                continue
            resolved = (page.parent / target.split("#")[0]).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)} → {target}")
    assert not broken, broken
    for page in pages:
        assert "../shared" not in page.read_text(encoding="utf-8"), page


@pytest.mark.req("R-PKG-3")
def test_no_build_artefacts_or_binaries_are_tracked() -> None:
    bad = []
    for name in tracked_files():
        parts = Path(name).parts
        artefact = parts[0] in {"build", "dist"} or any(p.endswith(".egg-info") or p == "__pycache__" for p in parts)
        binary = Path(name).suffix in BINARY_SUFFIXES or (
            name not in TRACKED_BINARIES and b"\0" in (ROOT / name).read_bytes()[:8192]
        )
        if artefact or binary:
            bad.append(name)
    assert not bad, f"tracked artefacts or binaries: {bad}"


@pytest.mark.req("R-PKG-1")
def test_every_import_is_a_declared_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = requirement_names(project["dependencies"])
    dev = runtime | requirement_names(project["optional-dependencies"]["dev"])
    local = local_modules()

    def undeclared(imports: dict[str, str], declared: set[str]) -> dict[str, str]:
        return {
            module: where
            for module, where in imports.items()
            if DISTRIBUTION_OF.get(module, module).lower().replace("_", "-") not in declared
            and module not in PROVIDED_BY
        }

    runtime_missing = undeclared(third_party_imports(["app", "rpc", "gateway", "migrations"], local), runtime)
    assert not runtime_missing, f"imported at run time but not in [project] dependencies: {runtime_missing}"
    for path, extra in OPTIONAL_FILES.items():
        allowed = runtime | requirement_names(project["optional-dependencies"][extra])
        optional_missing = undeclared(third_party_imports([path], local), allowed)
        assert not optional_missing, f"imported by {path} but not in [{extra}]: {optional_missing}"
        assert requirement_names(project["optional-dependencies"][extra]) <= dev, f"[dev] lacks [{extra}]"
    dev_missing = undeclared(third_party_imports(["tests", "benchmarks", "docker", ".ci"], local), dev)
    assert not dev_missing, f"imported by tests/benchmarks but not declared in [dev]: {dev_missing}"
    client = tomllib.loads((ROOT / CLIENT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    own = requirement_names(
        [*client["dependencies"], *(r for extra in client["optional-dependencies"].values() for r in extra)]
    )
    client_missing = undeclared(third_party_imports([CLIENT], local), own)
    assert not client_missing, f"imported by {CLIENT} but not in its pyproject.toml: {client_missing}"
    for directory in OWN_VENVS:
        lines = (ROOT / directory / "requirements.txt").read_text(encoding="utf-8").splitlines()
        pinned = requirement_names([line for line in lines if line.strip() and not line.startswith("#")])
        missing = undeclared(third_party_imports([directory], local), pinned)
        assert not missing, f"imported in {directory} but not in its requirements.txt: {missing}"


@pytest.mark.req("R-PKG-1")
def test_sqlalchemy_is_declared_with_its_asyncio_extra() -> None:
    """Regression: without `greenlet` (the asyncio extra), a plain `pip install .` gave a daemon that crashed."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert any(req.replace(" ", "").startswith("sqlalchemy[asyncio]") for req in project["dependencies"])


@pytest.mark.req("R-PKG-2")
def test_constraints_pin_every_dev_dependency() -> None:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt pins exact versions: {line!r}"
            pins[name.lower().replace("_", "-")] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = requirement_names(project["dependencies"] + project["optional-dependencies"]["dev"]) | {"greenlet"}
    unpinned = sorted(name.replace("_", "-") for name in wanted if name.replace("_", "-") not in pins)
    assert not unpinned, f"not pinned in constraints.txt: {unpinned}"
