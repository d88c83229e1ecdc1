"""Living under a service manager (SPEC §21, R-SVC): inherited sockets, readiness messages, unit files.

Each module is imported only when its environment variable or command asks for it, so a daemon started by hand
pays nothing for them.
"""
