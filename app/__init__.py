"""The daemon's domain (config, auth, sessions, storage, files) and its composition root: only `app.daemon` and the
CLI's commands wire in the protocol (rpc/) and the gateway; the domain modules import neither.

`__version__` is the package version, read by setuptools at build time (pyproject.toml) and by the daemon as is:
looking it up in the installed metadata (importlib.metadata) costs ~10 ms of imports, paid by the first
`initialize` (issue 15).
"""

__version__ = "0.1.0"
