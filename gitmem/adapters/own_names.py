"""This machine's own names and addresses: what a console bound to every address answers
to, so that a request naming anything else (a DNS-rebound name) is refused."""

from __future__ import annotations

import contextlib
import ipaddress
import socket

__all__ = ["interface_addresses", "outward_address", "own_names"]

_SIOCGIFADDR = 0x8915  # Linux: an interface's IPv4 address


def outward_address() -> str | None:
    """The address this machine reaches the network from (a UDP socket "connected"
    to a documentation address sends nothing), or ``None`` when it has no route."""
    for family, target in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.connect((target, 9))
                found = str(probe.getsockname()[0])
        except OSError:
            continue
        if found not in ("0.0.0.0", "::"):
            return found
    return None


def own_names() -> set[str]:
    """This machine's names and addresses: loopback, its hostname, its fully qualified
    name, what they resolve to, and each network interface's addresses."""
    names = {"localhost", "127.0.0.1", "::1"}
    for name in {socket.gethostname(), socket.getfqdn()} - {""}:
        names.add(name.lower())
        with contextlib.suppress(OSError, UnicodeError):
            names.update(str(info[4][0]) for info in socket.getaddrinfo(name, None))
    outward = outward_address()
    if outward:
        names.add(outward)
    names.update(interface_addresses())
    return {name.split("%", 1)[0] for name in names}


def interface_addresses() -> set[str]:
    """Each network interface's addresses, where the system says (Linux); else none."""
    found: set[str] = set()
    with contextlib.suppress(OSError, ImportError, AttributeError):
        import fcntl
        import struct

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            for _, name in socket.if_nameindex():
                with contextlib.suppress(OSError):
                    asked = struct.pack("256s", name.encode()[:15])
                    answer = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, asked)
                    found.add(socket.inet_ntoa(answer[20:24]))
    with contextlib.suppress(OSError, ValueError), open("/proc/net/if_inet6") as table:
        for line in table:
            digits = line.split()[0]
            found.add(str(ipaddress.IPv6Address(bytes.fromhex(digits))))
    return found
