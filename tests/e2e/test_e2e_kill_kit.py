"""SIGKILL anywhere, the short version (issue 16): six seeded kills of a real daemon, one in each operation kind of
`benchmarks/kill_kit.py` (a streaming turn, a trim, an upload commit, a `config/set-many` write, pairing, session
kill/delete), each followed by a restart on the same config dir and that kind's invariants (see the kit's
docstring). Runs on SQLite and, in the CI PostgreSQL pass, on PostgreSQL (R-STORE-2), like test_e2e_crash.py.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_harness import DaemonFactory

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import kill_kit

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint, SIGKILL"),
    pytest.mark.req("R-STORE-2"),
]


@pytest.fixture
def factory() -> Iterator[DaemonFactory]:
    f = DaemonFactory()
    try:
        yield f
    finally:
        f.close()


def test_the_schedule_covers_every_kind_in_each_run_of_six() -> None:
    import random

    order = kill_kit.schedule(30, random.Random(1))
    assert len(order) == 30
    for start in range(0, 30, len(kill_kit.KINDS)):
        assert sorted(order[start : start + len(kill_kit.KINDS)]) == sorted(kill_kit.KINDS)


@pytest.mark.req("R-ACP-2")
@pytest.mark.req("R-ACP-4")
@pytest.mark.req("R-ACP-5")
@pytest.mark.req("R-ACP-9")
@pytest.mark.req("R-ACP-10")
@pytest.mark.req("R-CFG-5")
@pytest.mark.req("R-FILE-3")
@pytest.mark.req("R-AUTH-4")
async def test_six_seeded_kills_one_per_kind_all_recover(factory: DaemonFactory) -> None:
    lines: list[str] = []
    report = await kill_kit.run_kit(factory, kills=6, seed=16016, quick=True, time_limit=60, out=lines.append)
    detail = "\n".join(lines)
    assert report.kills == 6 and not report.stopped_early, detail
    assert sorted(report.kinds) == sorted(kill_kit.KINDS), (report.kinds, detail)
    assert report.violations == 0, detail
    assert report.recovered == 6, detail
