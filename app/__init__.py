"""The daemon's domain: config, auth, sessions, storage, files; no protocol (rpc/) or HTTP (gateway/) in here."""

# The package version, read by setuptools at build time (pyproject.toml) and by the daemon as is: looking it up in
# the installed metadata (importlib.metadata) costs ~10 ms of imports, paid by the first `initialize` (issue 15).
__version__ = "0.1.0"
