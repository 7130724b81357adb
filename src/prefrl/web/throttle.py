"""Failed sign-ins, counted per client address and over the whole server.

The server checks a token first and counts only failures: a valid token is always
accepted, so no one can lock a labeller out by failing sign-ins from (or in the name of)
their address. Failures are what is throttled: more than ``max_failures`` from one
address, or ``max_total`` from all addresses together, within ``window_s`` seconds, and
further wrong tokens are answered 429 until the window has passed. The total cap is what
makes rotating addresses (or a botnet) gain nothing. IPv6 addresses count by their /64
network, the block one subscriber usually holds.

Example:
    >>> t = FailedSignIns(max_failures=2, window_s=60.0, max_total=100)
    >>> t.failed("198.51.100.7"); t.failed("198.51.100.7")
    >>> t.retry_after("198.51.100.7") > 0, t.retry_after("203.0.113.1") == 0
    (True, True)
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import OrderedDict, deque


def client_key(address: str) -> str:
    """What failures are counted by: the address itself, or its /64 for IPv6."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address[:100]
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class FailedSignIns:
    """Recent failed sign-ins per client and in total; :meth:`retry_after` > 0 while throttled.

    Memory is bounded: each client keeps its last ``max_failures`` failure times, the server
    its last ``max_total``, and at most ``max_clients`` clients are remembered (those with no
    failure in the window go first, then the least recently failing)."""

    def __init__(
        self, max_failures: int, window_s: float, max_total: int | None = None, max_clients: int = 10_000
    ) -> None:
        if max_failures < 1 or not window_s > 0:
            raise ValueError(f"need max_failures >= 1 and window_s > 0, got {max_failures}, {window_s}")
        self.max_failures, self.window_s = max_failures, window_s
        self.max_total = 10 * max_failures if max_total is None else max_total
        self.max_clients = max_clients
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()
        self._all: deque[float] = deque(maxlen=self.max_total)

    def _wait(self, times: deque[float], limit: int, now: float) -> float:
        """Seconds until fewer than ``limit`` of ``times`` (the most recent ones) are in the window."""
        if len(times) < limit:
            return 0.0
        return max(0.0, times[-limit] + self.window_s - now)

    def retry_after(self, client: str) -> float:
        """Seconds ``client`` must wait before a wrong token is answered 401 again (0: not throttled)."""
        now = time.monotonic()
        with self._lock:
            mine = self._seen.get(client_key(client))
            own = 0.0 if mine is None else self._wait(mine, self.max_failures, now)
            return max(own, self._wait(self._all, self.max_total, now))

    def server_wide(self) -> bool:
        """Whether the total cap (not one client's) is what throttles now."""
        with self._lock:
            return self._wait(self._all, self.max_total, time.monotonic()) > 0

    def failed(self, client: str) -> None:
        """Count one failed sign-in of ``client``."""
        now = time.monotonic()
        key = client_key(client)
        with self._lock:
            self._all.append(now)
            times = self._seen.pop(key, None) or deque(maxlen=self.max_failures)
            times.append(now)
            self._seen[key] = times  # most recently failing last
            if len(self._seen) > self.max_clients:
                self._forget(now)

    def _forget(self, now: float) -> None:
        for k in [k for k, t in self._seen.items() if t[-1] <= now - self.window_s]:
            del self._seen[k]
        while len(self._seen) > self.max_clients:
            self._seen.popitem(last=False)
