"""An MCP server that will not start until a marker file exists (tests/e2e/test_e2e_mcp.py, R-MCP-4):
`flaky.py MARKER fail` exits at once without it, `flaky.py MARKER hang` never answers the handshake without it
(killed when the daemon gives up); with the marker it is the crashy server."""

from __future__ import annotations

import runpy
import sys
import threading
from pathlib import Path


def main(marker: str, mode: str) -> None:
    if not Path(marker).exists():
        if mode == "hang":
            threading.Event().wait()  # never answers `initialize`: the daemon's startup timeout ends it
        sys.exit("flaky: not ready yet")
    sys.argv = [str(Path(__file__).with_name("crashy.py"))]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
