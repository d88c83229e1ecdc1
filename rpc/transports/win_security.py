"""Win32 pieces of the named-pipe transport: flags, the pipe's DACL, and the ctypes API (R-SEC-4).

Everything that touches Win32 sits behind `Win32PipeApi` so the accept loop in `pipe.py` can be unit-tested on
Linux with a fake. The ctypes implementation is defined only on Windows (`ctypes.WinDLL` does not exist
elsewhere), and `pipe.py` creates it lazily.
"""

from __future__ import annotations

import re
import sys
from typing import Protocol

__all__ = [
    "ERROR_ACCESS_DENIED",
    "ERROR_PIPE_BUSY",
    "FILE_FLAG_FIRST_PIPE_INSTANCE",
    "FILE_FLAG_OVERLAPPED",
    "PIPE_ACCESS_DUPLEX",
    "PIPE_READMODE_BYTE",
    "PIPE_REJECT_REMOTE_CLIENTS",
    "PIPE_TYPE_BYTE",
    "PIPE_UNLIMITED_INSTANCES",
    "PIPE_WAIT",
    "Win32PipeApi",
    "build_sddl",
]

# winbase.h / winerror.h values, spelled out so this module imports on every platform.
PIPE_ACCESS_DUPLEX = 0x00000003
FILE_FLAG_OVERLAPPED = 0x40000000
FILE_FLAG_FIRST_PIPE_INSTANCE = 0x00080000
PIPE_TYPE_BYTE = 0x00000000
PIPE_READMODE_BYTE = 0x00000000
PIPE_WAIT = 0x00000000
PIPE_REJECT_REMOTE_CLIENTS = 0x00000008
PIPE_UNLIMITED_INSTANCES = 255
ERROR_ACCESS_DENIED = 5
ERROR_PIPE_BUSY = 231

_SID = re.compile(r"S-1-[0-9]+(-[0-9]+)+")  # ASCII digits only: \d would take any Unicode digit


def build_sddl(owner_sid: str, *, deny_network: bool = False) -> str:
    """The pipe's security descriptor: full access for SYSTEM and `owner_sid`, nobody else.

    `D:P` makes the DACL protected (nothing inherited) and there are no inheritance flags on the ACEs, so the
    only principals that can open the pipe are the two named here. Everyone else, including other users'
    processes, low-integrity and AppContainer processes of this user, gets ACCESS_DENIED from the kernel.
    Creating further instances needs FILE_CREATE_PIPE_INSTANCE, which only these two principals hold, so
    another user cannot add an instance of our pipe and intercept clients.

    Network clients: remote connections are refused by `PIPE_REJECT_REMOTE_CLIENTS` on every instance, so
    the deny-NETWORK ACE `(D;;GA;;;NU)` is off by default. It would also refuse the *same* user whenever the
    token carries the NETWORK SID, which is the case for OpenSSH key-authenticated sessions (S4U network
    logon): a daemon started over ssh could not then be reached even from that same session. `deny_network`
    adds it (deny ACEs first, as the canonical DACL order requires) for deployments that never use ssh.

    `owner_sid` must be a string SID (`S-1-...`): it is checked so nothing can be smuggled into the SDDL.
    """
    if not _SID.fullmatch(owner_sid):
        raise ValueError(f"not a string SID: {owner_sid!r}")
    deny = "(D;;GA;;;NU)" if deny_network else ""
    return f"D:P{deny}(A;;GA;;;SY)(A;;GA;;;{owner_sid})"


class Win32PipeApi(Protocol):
    """The Win32 calls the pipe server makes; errors are raised as `OSError` with `winerror` set."""

    def current_user_sid(self) -> str:
        """The process token's user SID as a string (OpenProcessToken + GetTokenInformation(TokenUser))."""
        ...

    def security_attributes(self, sddl: str) -> object:
        """An opaque SECURITY_ATTRIBUTES built from `sddl`; valid until `free_security_attributes`."""
        ...

    def free_security_attributes(self, attributes: object) -> None: ...

    def create_named_pipe(
        self,
        name: str,
        open_mode: int,
        pipe_mode: int,
        max_instances: int,
        out_buffer: int,
        in_buffer: int,
        default_timeout_ms: int,
        attributes: object,
    ) -> int:
        """CreateNamedPipeW; returns the raw handle."""
        ...

    def close_handle(self, handle: int) -> None: ...


if sys.platform == "win32":
    import ctypes
    from ctypes import wintypes

    _TOKEN_QUERY = 0x0008
    _TOKEN_USER = 1  # TOKEN_INFORMATION_CLASS.TokenUser
    _SDDL_REVISION_1 = 1
    _INVALID_HANDLE_VALUE = ctypes.c_void_p(-1).value

    class _SecurityAttributes(ctypes.Structure):
        _fields_ = [
            ("nLength", wintypes.DWORD),
            ("lpSecurityDescriptor", ctypes.c_void_p),
            ("bInheritHandle", wintypes.BOOL),
        ]

    class _SidAndAttributes(ctypes.Structure):
        _fields_ = [("Sid", ctypes.c_void_p), ("Attributes", wintypes.DWORD)]

    def _check(ok: object) -> None:
        if not ok:
            raise ctypes.WinError(ctypes.get_last_error())

    class CtypesWin32PipeApi:
        """The real `Win32PipeApi` (kernel32 + advapi32 through ctypes)."""

        def __init__(self) -> None:
            k32 = ctypes.WinDLL("kernel32", use_last_error=True)
            adv = ctypes.WinDLL("advapi32", use_last_error=True)
            h, dw, p = wintypes.HANDLE, wintypes.DWORD, ctypes.c_void_p
            k32.GetCurrentProcess.argtypes, k32.GetCurrentProcess.restype = [], h
            k32.CloseHandle.argtypes, k32.CloseHandle.restype = [h], wintypes.BOOL
            k32.LocalFree.argtypes, k32.LocalFree.restype = [p], p
            k32.CreateNamedPipeW.argtypes = [wintypes.LPCWSTR, dw, dw, dw, dw, dw, dw, p]
            k32.CreateNamedPipeW.restype = h
            adv.OpenProcessToken.argtypes = [h, dw, ctypes.POINTER(h)]
            adv.OpenProcessToken.restype = wintypes.BOOL
            adv.GetTokenInformation.argtypes = [h, ctypes.c_int, p, dw, ctypes.POINTER(dw)]
            adv.GetTokenInformation.restype = wintypes.BOOL
            adv.ConvertSidToStringSidW.argtypes = [p, ctypes.POINTER(p)]
            adv.ConvertSidToStringSidW.restype = wintypes.BOOL
            conv = adv.ConvertStringSecurityDescriptorToSecurityDescriptorW
            conv.argtypes, conv.restype = [wintypes.LPCWSTR, dw, ctypes.POINTER(p), p], wintypes.BOOL
            self._k32, self._adv = k32, adv

        def current_user_sid(self) -> str:
            token = wintypes.HANDLE()
            _check(self._adv.OpenProcessToken(self._k32.GetCurrentProcess(), _TOKEN_QUERY, ctypes.byref(token)))
            try:
                size = wintypes.DWORD()
                # The sizing call fails with ERROR_INSUFFICIENT_BUFFER by design; only `size` matters.
                self._adv.GetTokenInformation(token, _TOKEN_USER, None, 0, ctypes.byref(size))
                buf = ctypes.create_string_buffer(size.value)
                _check(self._adv.GetTokenInformation(token, _TOKEN_USER, buf, size, ctypes.byref(size)))
                user = _SidAndAttributes.from_buffer(buf)  # TOKEN_USER is one SID_AND_ATTRIBUTES
                text = ctypes.c_void_p()
                _check(self._adv.ConvertSidToStringSidW(user.Sid, ctypes.byref(text)))
                try:
                    return ctypes.wstring_at(text.value or 0)
                finally:
                    self._k32.LocalFree(text)
            finally:
                self._k32.CloseHandle(token)

        def security_attributes(self, sddl: str) -> object:
            sd = ctypes.c_void_p()
            conv = self._adv.ConvertStringSecurityDescriptorToSecurityDescriptorW
            _check(conv(sddl, _SDDL_REVISION_1, ctypes.byref(sd), None))
            return _SecurityAttributes(ctypes.sizeof(_SecurityAttributes), sd, False)

        def free_security_attributes(self, attributes: object) -> None:
            assert isinstance(attributes, _SecurityAttributes)
            if attributes.lpSecurityDescriptor:
                self._k32.LocalFree(attributes.lpSecurityDescriptor)
                attributes.lpSecurityDescriptor = None

        def create_named_pipe(
            self,
            name: str,
            open_mode: int,
            pipe_mode: int,
            max_instances: int,
            out_buffer: int,
            in_buffer: int,
            default_timeout_ms: int,
            attributes: object,
        ) -> int:
            assert isinstance(attributes, _SecurityAttributes)
            handle = self._k32.CreateNamedPipeW(
                name,
                open_mode,
                pipe_mode,
                max_instances,
                out_buffer,
                in_buffer,
                default_timeout_ms,
                ctypes.addressof(attributes),
            )
            if handle is None or handle == _INVALID_HANDLE_VALUE:
                raise ctypes.WinError(ctypes.get_last_error())
            return int(handle)

        def close_handle(self, handle: int) -> None:
            _check(self._k32.CloseHandle(handle))
