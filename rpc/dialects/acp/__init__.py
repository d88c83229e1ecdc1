"""The Agent Client Protocol v1 as a dialect (SPEC §19, R-EDIT-1..6; docs/acp.md)."""

from rpc.dialects.acp.dialect import ACP, AcpDialect

__all__ = ["ACP", "AcpDialect"]
