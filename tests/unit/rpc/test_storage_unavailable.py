"""A storage fault at the protocol boundary (R-STORE-3): `-32603` with `data.kind = "storage_unavailable"`, a
`reason` and an `error_id`, never the driver's text; over HTTP the same kind as 503."""

from __future__ import annotations

import errno

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from app.audit import AuditLog
from app.storage.faults import StorageFault
from gateway.errors import from_rpc_error
from rpc.core.boundary import ErrorBoundary
from rpc.core.errors import ResourcesExhausted, StorageUnavailable
from rpc.methods import ERROR_MAPPERS

pytestmark = pytest.mark.req("R-STORE-3")


def server() -> ErrorBoundary:
    """The daemon's error boundary, with every method family's mapper (as `app.daemon` installs them)."""
    rpc = ErrorBoundary(AuditLog(None))
    for mapper in ERROR_MAPPERS:
        rpc.add_mapper(mapper)
    return rpc


def disk_full() -> OperationalError:
    engine = sa.create_engine("sqlite+pysqlite:///:memory:")
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("CREATE TABLE t (x)")
            pages = conn.exec_driver_sql("PRAGMA page_count").scalar()
            conn.exec_driver_sql(f"PRAGMA max_page_count={pages}")
            try:
                conn.exec_driver_sql("INSERT INTO t VALUES (?)", ("x" * 100_000,))
            except OperationalError as exc:
                return exc
    finally:
        engine.dispose()
    raise AssertionError("the insert should have failed")


def test_a_full_disk_answers_storage_unavailable_without_the_driver_text() -> None:
    error = server().to_rpc_error(disk_full()).to_error()
    assert error["code"] == -32603
    data = error["data"]
    assert data["kind"] == "storage_unavailable" and data["reason"] == "disk_full", data
    assert len(data["error_id"]) == 16
    assert error["message"] == StorageUnavailable.default_message  # a fixed sentence
    assert "INSERT" not in str(error) and "database or disk" not in str(error)


def test_each_answer_has_its_own_error_id() -> None:
    rpc = server()
    assert rpc.to_rpc_error(disk_full()).data["error_id"] != rpc.to_rpc_error(disk_full()).data["error_id"]


def test_an_injected_store_fault_stays_an_internal_error() -> None:
    data = server().to_rpc_error(StorageFault("kill")).data  # R-ACP-11's tests rely on this
    assert data["kind"] == "internal_error" and "error_id" in data and "reason" not in data


def test_over_http_it_is_503_with_the_same_kind_and_data() -> None:
    api = from_rpc_error(server().to_rpc_error(disk_full()))
    assert api.status == 503 and api.kind == "storage_unavailable"
    assert api.extra["reason"] == "disk_full" and api.extra["error_id"]


@pytest.mark.req("R-LIM")
@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENFILE])
def test_regression_out_of_file_descriptors_is_a_clear_error_not_an_unexpected_failure(
    code: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by benchmarks/exhaustion.py: a turn at the descriptor limit failed importing its provider
    (`OSError: [Errno 24] Too many open files`) and was answered `internal_error` with a traceback in the log."""
    try:
        try:
            raise OSError(code, "Too many open files")
        except OSError as exc:
            raise RuntimeError("wrapped") from exc
    except RuntimeError as wrapped:
        error = server().to_rpc_error(wrapped)
    assert isinstance(error, ResourcesExhausted)
    assert error.code == -32603 and error.data["kind"] == "resources_exhausted"
    assert error.data["reason"] == "file_descriptors" and error.data["error_id"]
    assert not any(record.exc_info for record in caplog.records)
    assert from_rpc_error(error).status == 503
