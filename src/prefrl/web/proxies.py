"""Which client sent a request: the socket peer, or what a trusted reverse proxy says.

A proxy header (``X-Forwarded-For``, ``Forwarded``) is whatever the sender wrote, so it is
read only when the direct peer is a proxy the operator named (``--forwarded-allow-ips``),
and only the header that operator chose: a proxy that appends to one of them passes the
other through from the client untouched. Each proxy appends the address it saw, so the
client is the right-most address in the header that is not itself a trusted proxy; what
the client wrote to the left of it is never used.

Example:
    >>> proxies = TrustedProxies.parse("10.0.0.1, 192.168.0.0/16")
    >>> proxies.client("10.0.0.1", [("x-forwarded-for", "6.6.6.6, 203.0.113.9, 192.168.1.2")])
    '203.0.113.9'
    >>> proxies.client("198.51.100.4", [("x-forwarded-for", "6.6.6.6")])  # not a trusted peer
    '198.51.100.4'
    >>> TrustedProxies.parse("").client("127.0.0.1", [("x-forwarded-for", "6.6.6.6")])
    '127.0.0.1'
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
HEADERS = ("x-forwarded-for", "forwarded")
MAX_HOPS = 32  # entries of a header looked at (from the right); a longer chain is cut there
_FOR = re.compile(r'(?:^|;)\s*for\s*=\s*("(?:[^"\\]|\\.)*"|[^;,\s]*)', re.IGNORECASE)


def parse_ip(value: str) -> IPAddress | None:
    """The address in ``value`` (``1.2.3.4``, ``1.2.3.4:80``, ``::1``, ``[::1]:80``); ``None``
    when it is none (``unknown``, an obfuscated name, junk). IPv4-mapped IPv6 becomes IPv4."""
    v = value.strip().strip('"').strip()
    if v.startswith("["):
        end = v.find("]")
        if end < 0 or (v[end + 1 :] and not re.fullmatch(r":[0-9]{1,5}", v[end + 1 :])):
            return None
        v = v[1:end]
    elif v.count(":") == 1:  # IPv4 with a port (a bare IPv6 address has several colons)
        v, _, port = v.partition(":")
        if not port.isdigit():
            return None
    try:
        ip = ipaddress.ip_address(v)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def hops(header: str, values: Sequence[str]) -> list[str]:
    """The addresses a proxy header lists, left (first hop) to right (last), as written.

    Several fields of one header are one list in order (RFC 9110); a ``Forwarded`` element
    without ``for=`` is an empty entry (an unknown hop)."""
    joined = ",".join(values)
    if header == "x-forwarded-for":
        return [h.strip() for h in joined.split(",")]
    out = []
    for element in _split_elements(joined):
        m = _FOR.search(element)
        out.append(m.group(1).strip('"') if m else "")
    return out


def _split_elements(value: str) -> list[str]:
    """``Forwarded`` elements: split at commas outside quoted strings."""
    parts: list[str] = []
    cur: list[str] = []
    quoted = escaped = False
    for ch in value:
        if escaped:
            escaped = False
        elif ch == "\\" and quoted:
            escaped = True
        elif ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


@dataclass(frozen=True)
class TrustedProxies:
    """The reverse proxies whose ``header`` is believed; none (the default): the peer is the client."""

    networks: tuple[IPNetwork, ...] = ()
    header: str = "x-forwarded-for"

    @classmethod
    def parse(cls, spec: str | Iterable[str] | None, header: str = "x-forwarded-for") -> TrustedProxies:
        """From ``"10.0.0.1,127.0.0.1"`` or ``["10.0.0.0/8", "::1"]`` (addresses or networks);
        ``ValueError`` naming an entry that is neither (a host name, ``*``)."""
        if header not in HEADERS:
            raise ValueError(f"proxy header must be one of {', '.join(HEADERS)}, got {header!r}")
        items = spec.split(",") if isinstance(spec, str) else list(spec or ())
        nets: list[IPNetwork] = []
        for item in (i.strip() for i in items):
            if not item:
                continue
            if item == "*":
                raise ValueError(
                    "'*' would let any client choose its address: name the proxies' addresses or "
                    "networks (e.g. 10.0.0.1 or 10.0.0.0/8)"
                )
            try:
                nets.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                raise ValueError(
                    f"trusted proxy {item!r} is not an IP address or network (e.g. 10.0.0.1, 10.0.0.0/8)"
                ) from None
        return cls(tuple(nets), header)

    def trusts(self, ip: IPAddress | None) -> bool:
        """Whether ``ip`` is one of the trusted proxies."""
        return ip is not None and any(ip.version == n.version and ip in n for n in self.networks)

    def client(self, peer: str, headers: Iterable[tuple[str, str]]) -> str:
        """The client's address: ``peer`` (the socket's), unless ``peer`` is a trusted proxy;
        then the right-most address in the chosen header that is not a trusted proxy.

        A chain that ends in something that is no address (``unknown``, junk) stops there:
        the hop that reported it (a trusted proxy) is taken as the client."""
        peer_ip = parse_ip(peer)
        if not self.trusts(peer_ip):
            return peer if peer_ip is None else str(peer_ip)
        values = [v for k, v in headers if k == self.header]
        client = str(peer_ip)
        for entry in reversed(hops(self.header, values)[-MAX_HOPS:]):
            ip = parse_ip(entry)
            if ip is None:
                break
            client = str(ip)
            if not self.trusts(ip):
                break
        return client
