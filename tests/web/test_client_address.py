"""No client-sent header decides who a client is: proxy headers count only from proxies the
operator trusts, and failing sign-ins (from any address, real or claimed) can neither get past
the throttle nor lock a valid token out. Real servers on loopback: ``prefrl label`` in a
subprocess, and the app under uvicorn in a thread."""

from __future__ import annotations

import httpx
import pytest

from prefrl.web.proxies import TrustedProxies
from prefrl.web.throttle import FailedSignIns, client_key
from tests.storage.backends import Backend
from tests.web.server import Server, ThreadServer


def auth(token: str, **headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **headers}


def xff(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


def test_spoofed_proxy_headers_neither_bypass_the_throttle_nor_lock_anyone_out(
    process_server: Server, tokens: dict[str, str]
) -> None:
    """``prefrl label`` as run (no trusted proxies, 10 failures a minute per address): a new
    address in the headers per request still gets 429 after the limit, and a labeller whose
    address was named in those headers (or who shares the attacker's) still signs in."""
    u = process_server.url
    victim = "203.0.113.5"
    codes = []
    for i in range(12):  # every guess claims another address, or the victim's
        spoof = {**xff(f"198.51.100.{i}, 10.0.0.{i}"), "Forwarded": f"for=192.0.2.{i}", "X-Real-IP": victim}
        codes.append(httpx.get(u + "/api/me", headers=auth(f"guess-{i}", **spoof)).status_code)
    assert codes == [401] * 10 + [429] * 2
    r = httpx.post(u + "/api/session", json={"token": "guess"}, headers=xff("192.0.2.200"))
    assert r.status_code == 429 and int(r.headers["Retry-After"]) > 0
    assert "from your address" in r.json()["detail"]
    # the labellers (here on the attacker's own address, and naming the victim's) still get in
    me = httpx.get(u + "/api/me", headers=auth(tokens["ann"], **xff(victim)))
    assert me.status_code == 200 and me.json()["name"] == "ann"
    assert httpx.post(u + "/api/session", json={"token": tokens["bob"]}).status_code == 200


@pytest.fixture
def proxied(backend: Backend, tokens: dict[str, str]) -> ThreadServer:
    """The app behind a trusted proxy on 127.0.0.1: 3 failures per address, 8 in total a minute."""
    return ThreadServer(
        backend.store,
        clip_dir=backend.clip_dir,
        forwarded_allow_ips="10.9.9.9, 127.0.0.1",
        max_failures=3,
        max_failures_total=8,
    ).start()


def test_a_trusted_proxy_names_the_client(proxied: ThreadServer, tokens: dict[str, str]) -> None:
    u = proxied.url
    try:
        for _ in range(3):
            assert httpx.get(u + "/api/me", headers=auth("guess", **xff("198.51.100.1"))).status_code == 401
        # the proxy appends the address it saw; what the client wrote before it is not used
        for claimed in ("198.51.100.1", "198.51.100.77, 198.51.100.1", "198.51.100.1, 10.9.9.9"):
            r = httpx.get(u + "/api/me", headers=auth("guess", **xff(claimed)))
            assert r.status_code == 429, claimed
        # another client behind the same proxy is not throttled, nor is the proxy itself
        assert httpx.get(u + "/api/me", headers=auth("guess", **xff("198.51.100.2"))).status_code == 401
        assert httpx.get(u + "/api/me", headers=auth("guess")).status_code == 401
        # the Forwarded header is not the one this proxy sets: ignored
        fwd = {"Forwarded": "for=198.51.100.3", **xff("198.51.100.1")}
        assert httpx.get(u + "/api/me", headers=auth("guess", **fwd)).status_code == 429
        # a throttled address still signs in with a valid token
        assert httpx.get(u + "/api/me", headers=auth(tokens["ann"], **xff("198.51.100.1"))).status_code == 200
    finally:
        proxied.stop()


def test_rotating_addresses_meet_the_server_wide_cap(proxied: ThreadServer, tokens: dict[str, str]) -> None:
    u = proxied.url
    try:
        codes = [
            httpx.get(u + "/api/me", headers=auth("guess", **xff(f"198.51.100.{i}"))).status_code
            for i in range(10)
        ]
        assert codes == [401] * 8 + [429] * 2  # 8 in total, though no address failed twice
        r = httpx.post(u + "/api/session", json={"token": "guess"}, headers=xff("192.0.2.1"))
        assert r.status_code == 429 and "on this server" in r.json()["detail"]
        ok = httpx.post(u + "/api/session", json={"token": tokens["bob"]}, headers=xff("192.0.2.1"))
        assert ok.status_code == 200 and ok.json()["name"] == "bob"
    finally:
        proxied.stop()


def test_a_proxy_setting_forwarded_is_read_from_that_header(backend: Backend, tokens: dict[str, str]) -> None:
    srv = ThreadServer(
        backend.store,
        clip_dir=backend.clip_dir,
        forwarded_allow_ips="127.0.0.0/8",
        proxy_header="forwarded",
        max_failures=2,
    ).start()
    try:
        u = srv.url
        ipv6 = {"Forwarded": 'for="[2001:db8:cafe::17]:4711";proto=https'}
        assert [httpx.get(u + "/api/me", headers=auth("g", **ipv6)).status_code for _ in range(3)] == [
            401,
            401,
            429,
        ]
        # the same /64 is the same client; X-Forwarded-For is not this proxy's header
        same_net = {"Forwarded": 'for="[2001:db8:cafe::99]"', **xff("198.51.100.8")}
        assert httpx.get(u + "/api/me", headers=auth("g", **same_net)).status_code == 429
        other = {"Forwarded": "for=192.0.2.43", **xff("2001:db8:cafe::17")}
        assert httpx.get(u + "/api/me", headers=auth("g", **other)).status_code == 401
    finally:
        srv.stop()


def test_client_address_rules() -> None:
    none = TrustedProxies.parse(None)
    assert none.client("127.0.0.1", [("x-forwarded-for", "6.6.6.6")]) == "127.0.0.1"
    p = TrustedProxies.parse("10.0.0.1,192.168.0.0/16, ::1")
    h = "x-forwarded-for"
    assert p.client("10.0.0.1", [(h, "1.1.1.1, 2.2.2.2")]) == "2.2.2.2"
    assert p.client("10.0.0.1", [(h, "1.1.1.1"), (h, "2.2.2.2, 192.168.4.4")]) == "2.2.2.2"  # two fields
    assert p.client("::1", [(h, "[2001:db8::5]:443")]) == "2001:db8::5"
    assert p.client("::ffff:10.0.0.1", [(h, "203.0.113.4:8080")]) == "203.0.113.4"  # mapped peer, port
    assert p.client("10.0.0.1", [(h, "192.168.1.1, 10.0.0.1")]) == "192.168.1.1"  # all trusted: left-most
    assert p.client("10.0.0.1", [(h, "9.9.9.9, unknown, 10.0.0.1")]) == "10.0.0.1"  # junk: its reporter
    assert p.client("10.0.0.1", [(h, "")]) == "10.0.0.1"
    assert p.client("10.0.0.1", []) == "10.0.0.1"
    assert p.client("10.0.0.2", [(h, "2.2.2.2")]) == "10.0.0.2"  # not a trusted peer
    f = TrustedProxies.parse("10.0.0.1", "forwarded")
    fwd = 'for=1.1.1.1;by=x, For="[2001:db8::1]:80";proto="a,b", for=10.0.0.1'
    assert f.client("10.0.0.1", [("forwarded", fwd), ("x-forwarded-for", "7.7.7.7")]) == "2001:db8::1"
    assert f.client("10.0.0.1", [("forwarded", "for=_hidden")]) == "10.0.0.1"
    for bad, says in (("*", "'*' would let any client"), ("proxy.local", "'proxy.local' is not an IP")):
        with pytest.raises(ValueError, match=says):
            TrustedProxies.parse(bad)
    with pytest.raises(ValueError, match="proxy header must be one of"):
        TrustedProxies.parse("10.0.0.1", "x-real-ip")


def test_failure_counts_are_bounded_and_ipv6_counts_by_64() -> None:
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert client_key("203.0.113.9") == "203.0.113.9"
    t = FailedSignIns(max_failures=2, window_s=60.0, max_total=10**6, max_clients=100)
    for i in range(1000):
        t.failed(f"10.{i // 256}.{i % 256}.1")
    assert len(t._seen) <= 100 and t.retry_after("10.0.0.1") == 0
    t.failed("10.3.231.1")  # the last one named is remembered: its second failure throttles it
    assert t.retry_after("10.3.231.1") > 0
