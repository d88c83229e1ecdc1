"""Principals, grants, permission profiles and pairing tokens (SPEC section 9)."""
