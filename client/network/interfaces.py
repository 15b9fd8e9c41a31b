"""The host's network interfaces: the address a client advertises (Nomad's network_interface,
else the address of the default route) and the device it belongs to."""

from __future__ import annotations

import ipaddress
import socket

import psutil


class InterfaceError(ValueError):
    """The named interface is absent or has no usable address; the message names the choices."""


def interface_address(name: str) -> str:
    """The interface's IPv4 address, else its first global IPv6 address (Nomad prefers IPv4)."""
    found = psutil.net_if_addrs()
    if name not in found:
        raise InterfaceError(f"no interface {name!r} on this host (it has: {', '.join(sorted(found))})")
    addresses = found[name]
    for family in (socket.AF_INET, socket.AF_INET6):
        for address in addresses:
            if address.family == family and not ipaddress.ip_address(address.address.split("%")[0]).is_link_local:
                return address.address.split("%")[0]
    raise InterfaceError(f"interface {name!r} has no IP address")


def device_of(ip: str) -> str:
    """The interface holding `ip`, or "" when none does (an address guessed from the route)."""
    for name, addresses in psutil.net_if_addrs().items():
        if any(a.address.split("%")[0] == ip for a in addresses if a.family in (socket.AF_INET, socket.AF_INET6)):
            return name
    return ""
