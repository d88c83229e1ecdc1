"""zerocode's dialect: the wire of ZeroClaw 0.8.4 (SPEC §17, R-ZC-1..6; docs/zerocode.md)."""

from rpc.dialects.zerocode.dialect import ZEROCODE, ZeroCodeDialect

__all__ = ["ZEROCODE", "ZeroCodeDialect"]
