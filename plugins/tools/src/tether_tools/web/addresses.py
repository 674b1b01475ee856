"""Which network addresses ``web_fetch`` may connect to (the SSRF guard).

A URL's host is turned into IP addresses exactly once, here, and the request is then sent
to the checked address (never re-resolved), so DNS rebinding cannot swap in another one.
Numeric hosts are parsed the way ``inet_aton`` does, which is how browsers and C
libraries read them: ``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1`` and
``0x7f.1`` all mean ``127.0.0.1``. IPv6 addresses that embed an IPv4 one (mapped,
compatible, NAT64, 6to4, Teredo) are judged by the embedded address.

Refused: loopback, private, shared (CGNAT), link-local (including the cloud metadata
service 169.254.169.254 and fd00:ec2::254), multicast, reserved, unspecified
(``0.0.0.0``, ``::``), every block of the IANA special-purpose registries (such as
192.0.0.0/24, AS112 and AMT, even where Python calls them global) and every other
address that is not globally routable.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass

from tether.errors import ToolError

__all__ = ["AddressPolicy", "parse_ipv4_loose", "resolve_public"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_METADATA = {
    ipaddress.ip_address("169.254.169.254"),
    ipaddress.ip_address("169.254.170.2"),
    ipaddress.ip_address("100.100.100.200"),
    ipaddress.ip_address("fd00:ec2::254"),
}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# The IANA IPv4 and IPv6 Special-Purpose Address Registries: none of these is a public web
# server, whatever a Python version's ``is_global`` says (3.11 calls 192.0.0.9 global).
_SPECIAL: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.ip_network(network), label)
    for network, label in (
        ("0.0.0.0/8", "this network"),
        ("10.0.0.0/8", "private use"),
        ("100.64.0.0/10", "shared address space"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link local"),
        ("172.16.0.0/12", "private use"),
        ("192.0.0.0/24", "IETF protocol assignments"),
        ("192.0.2.0/24", "documentation (TEST-NET-1)"),
        ("192.31.196.0/24", "AS112-v4"),
        ("192.52.193.0/24", "AMT"),
        ("192.88.99.0/24", "deprecated 6to4 relay anycast"),
        ("192.168.0.0/16", "private use"),
        ("192.175.48.0/24", "direct delegation AS112 service"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation (TEST-NET-2)"),
        ("203.0.113.0/24", "documentation (TEST-NET-3)"),
        ("240.0.0.0/4", "reserved"),
        ("255.255.255.255/32", "limited broadcast"),
        ("::1/128", "loopback"),
        ("::/128", "unspecified"),
        ("64:ff9b:1::/48", "IPv4-IPv6 translation"),
        ("100::/64", "discard-only"),
        ("100:0:0:1::/64", "dummy IPv6 prefix"),
        ("2001::/23", "IETF protocol assignments"),
        ("2001:db8::/32", "documentation"),
        ("2620:4f:8000::/48", "direct delegation AS112 service"),
        ("3fff::/20", "documentation"),
        ("5f00::/16", "segment routing SIDs"),
        ("fc00::/7", "unique local"),
        ("fe80::/10", "link-local unicast"),
    )
)


def parse_ipv4_loose(host: str) -> ipaddress.IPv4Address | None:
    """``host`` as an IPv4 address in any ``inet_aton`` form, or None if it is not one."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or any(p == "" for p in parts):
        return None
    numbers: list[int] = []
    for part in parts:
        try:
            if part.lower().startswith("0x"):
                numbers.append(int(part[2:] or "0", 16))
            elif len(part) > 1 and part.startswith("0"):
                numbers.append(int(part, 8))
            else:
                if not part.isdigit():
                    return None
                numbers.append(int(part, 10))
        except ValueError:
            return None
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (4 - len(leading)):
        return None
    value = 0
    for n in leading:
        value = value * 256 + n
    value = value * 256 ** (4 - len(leading)) + last
    return ipaddress.IPv4Address(value)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if int(address) >> 32 == 0 and int(address) > 1:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)  # IPv4-compatible ::a.b.c.d
    return None


def classify(address: IPAddress) -> str | None:
    """Why ``address`` is not a public internet address, or None if it is one."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            address = ipaddress.IPv6Address(str(address).split("%", 1)[0])
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            inner = classify(embedded)
            return f"{inner} (embedded in the IPv6 address {address})" if inner else None
    if address in _METADATA:
        return "the cloud metadata service"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private:
        return "a private network address"
    if address.is_reserved:
        return "a reserved address"
    if not address.is_global:
        return "not a public internet address"
    for network, label in _SPECIAL:
        if address.version == network.version and address in network:
            return f"an IANA special-purpose address ({label}, {network})"
    return None


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """``allow_private_hosts``: IPs, CIDR networks or host names that may be reached even
    though they are not public (e.g. ``["127.0.0.1"]`` for a local test server, or an
    intranet range). Empty by default: only public addresses."""

    allowed: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    allowed_names: tuple[str, ...] = ()

    @classmethod
    def from_entries(cls, entries: Sequence[str]) -> AddressPolicy:
        networks = []
        names = []
        for entry in entries:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                names.append(entry.lower().rstrip("."))
        return cls(tuple(networks), tuple(names))

    def permits(self, host: str, address: IPAddress) -> bool:
        if host.lower().rstrip(".") in self.allowed_names:
            return True
        return any(
            address in network for network in self.allowed if address.version == network.version
        )


async def resolve_public(host: str, port: int, policy: AddressPolicy, url: str) -> IPAddress:
    """The address to connect to for ``host``: every address it resolves to must be
    public (or allowed by ``policy``); raises :class:`ToolError` naming the problem."""
    literal = _literal(host)
    if literal is not None:
        addresses: list[IPAddress] = [literal]
    else:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM
            )
        except (socket.gaierror, UnicodeError) as exc:
            raise ToolError(f"Could not resolve the host of {url}: {exc}. Check the URL.") from None
        addresses = []
        for info in infos:
            text = str(info[4][0]).split("%", 1)[0]
            addresses.append(ipaddress.ip_address(text))
        if not addresses:
            raise ToolError(f"The host of {url} has no addresses.")
    for address in addresses:
        why = classify(address)
        if why is not None and not policy.permits(host, address):
            shown = host if str(address) == host else f"{host} ({address})"
            raise ToolError(
                f"Refused to fetch {url}: the host {shown} is {why}. web_fetch only reaches public "
                "internet addresses; nothing was sent."
            )
    return addresses[0]


def _literal(host: str) -> IPAddress | None:
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        pass
    return parse_ipv4_loose(text.rstrip("."))
