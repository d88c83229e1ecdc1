"""The daemon-wide upload budget: charges at begin, released once, metadata costs (R-FILE-4)."""

from __future__ import annotations

import pytest

from app.files.budget import PER_UPLOAD_OVERHEAD, UploadBudget, metadata_cost


@pytest.mark.req("R-FILE-4")
def test_charge_and_release() -> None:
    budget = UploadBudget(lambda: 1000)
    first = budget.charge(600)
    assert first is not None and budget.used == 600 and budget.available == 400
    assert budget.charge(401) is None and budget.used == 600  # a refused charge takes nothing
    second = budget.charge(400)
    assert second is not None and budget.used == 1000
    first.release()
    first.release()  # idempotent
    assert first.released and budget.used == 400
    second.release()
    assert budget.used == 0


@pytest.mark.req("R-FILE-4")
def test_empty_upload_still_costs_its_metadata() -> None:
    cost = metadata_cost("s1", "owner", "default", None, None, None, "up_x")
    assert cost >= PER_UPLOAD_OVERHEAD + len("s1ownerdefaultup_x")
    budget = UploadBudget(lambda: 3 * cost)
    charges = [budget.charge(0 + cost) for _ in range(3)]
    assert all(c is not None for c in charges)
    assert budget.charge(cost) is None  # bounded by the budget even though every payload is empty


@pytest.mark.req("R-FILE-4")
def test_metadata_cost_counts_utf8_bytes_of_every_kept_field() -> None:
    base = metadata_cost()
    assert base == PER_UPLOAD_OVERHEAD
    assert metadata_cost("é") == base + 2
    assert metadata_cost("a" * 255, "f" * 64) == base + 255 + 64
    assert metadata_cost(None, "") == base


def test_limit_is_read_at_each_charge() -> None:
    limit = [100]
    budget = UploadBudget(lambda: limit[0])
    held = budget.charge(100)
    assert held is not None
    limit[0] = 50  # shrunk below what is held: admitted uploads keep their charge, new ones wait
    assert budget.charge(1) is None and budget.available == 0
    held.release()
    assert budget.charge(50) is not None


def test_negative_charge_is_a_bug() -> None:
    with pytest.raises(ValueError, match="negative"):
        UploadBudget(lambda: 10).charge(-1)
