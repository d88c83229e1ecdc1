"""The panel's ES modules as the gateway serves them (R-GW-5, docs/panel.md "Files and serving").

The browser loads `web/app.js` with `<script type="module">` and follows its `import`s, with no build step: every
module it reaches must be served from `/static/` with a JavaScript content type (a module script with any other
type is refused), import only same-origin relative paths (the page's CSP is `script-src 'self'`), stay small and
import one way, with no cycle (the panel is split by concept; see the module map in docs/panel.md). Every `.js`
file in `web/` is reached, so the map has no stale entry.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pytest

WEB = Path(__file__).resolve().parents[3] / "web"
MAX_LINES = 400
MODULE_TAG = re.compile(r"""<script\s+type="module"\s+src="([^"]+)"\s*>\s*</script>""")
# `import … from "x"`, `export … from "x"`, `import "x"` (static forms only; dynamic import() is refused below)
STATIC_IMPORT = re.compile(
    r"""^(?:import\s+(?:[\w$*{},\s]+?\s+from\s+)?|export\s+(?:\*|\{[^}]*\})\s+from\s+)["']([^"']+)["']""",
    re.MULTILINE,
)


async def _module_graph(client: httpx.AsyncClient) -> tuple[dict[str, httpx.Response], dict[str, list[str]]]:
    """Every module the page loads, by its URL path, fetched as the browser would; and what each one imports."""
    index = await client.get("/")
    assert index.status_code == 200
    csp = index.headers["content-security-policy"]
    assert "script-src 'self'" in csp, csp
    entries = MODULE_TAG.findall(index.text)
    assert entries == ["static/app.js"], entries
    seen: dict[str, httpx.Response] = {}
    imports: dict[str, list[str]] = {}
    todo = [urljoin("/", src) for src in entries]
    while todo:
        url = todo.pop()
        if url in seen:
            continue
        response = await client.get(url)
        seen[url] = response
        assert response.status_code == 200, url
        assert not re.search(r"\bimport\s*\(", response.text), f"{url} uses a dynamic import()"
        specs = STATIC_IMPORT.findall(response.text)
        assert len(specs) >= len(re.findall(r"^import\b", response.text, re.MULTILINE)), f"{url}: an import not parsed"
        for spec in specs:
            assert spec.startswith("./") and spec.endswith(".js"), f"{url} imports {spec!r}, not a same-origin module"
        imports[url] = [urljoin(url, spec) for spec in specs]
        todo.extend(imports[url])
    return seen, imports


def _cycle(imports: dict[str, list[str]]) -> list[str] | None:
    """An import cycle, as the path that closes it, or None."""
    done: set[str] = set()

    def visit(url: str, path: list[str]) -> list[str] | None:
        if url in path:
            return [*path[path.index(url) :], url]
        if url in done:
            return None
        for target in imports.get(url, []):
            found = visit(target, [*path, url])
            if found:
                return found
        done.add(url)
        return None

    return next((c for c in (visit(url, []) for url in imports) if c), None)


@pytest.mark.req("R-GW-5")
async def test_every_panel_module_is_served_as_javascript(client: httpx.AsyncClient) -> None:
    modules, _ = await _module_graph(client)
    for url, response in modules.items():
        kind = response.headers["content-type"]
        assert "javascript" in kind, (url, kind)
    on_disk = {f"/static/{p.name}" for p in WEB.glob("*.js")}
    assert set(modules) == on_disk, f"not imported by the panel: {on_disk - set(modules)}"


@pytest.mark.req("R-GW-5")
async def test_panel_modules_are_small_and_import_one_way(client: httpx.AsyncClient) -> None:
    modules, imports = await _module_graph(client)
    assert len(modules) >= 8, sorted(modules)  # sign-in, sessions, chat, transcript, approvals, config, status, …
    sizes = {url: response.text.count("\n") for url, response in modules.items()}
    too_big = {url: n for url, n in sizes.items() if n > MAX_LINES}
    assert not too_big, f"split these by concept (at most {MAX_LINES} lines each): {too_big}"
    assert _cycle(imports) is None, f"import cycle: {' -> '.join(_cycle(imports) or [])}"
