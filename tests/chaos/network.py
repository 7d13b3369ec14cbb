"""Hosts of a test's own on this one machine: network namespaces, each joined by a veth pair to
a router (a namespace of its own that forwards between them), and a nemesis that partitions two
hosts — every packet between them dropped, both ways, without a word — and heals them again.

A partition is a pair of policy rules in the router (``ip rule … blackhole``): what one host
sends the other vanishes, as behind a firewall that drops it (Jepsen's partitions). Neither end
is told: an open connection sees its packets go unanswered, a new one waits for an answer to
its first packet. Links stay up, so a heal is the rules removed and the same connections carry
on, or fail where their peer gave up on them.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Host", "Network", "cannot_make_namespaces"]


def cannot_make_namespaces() -> str | None:
    """Why this process cannot make network namespaces here, or None when it can."""
    if shutil.which("ip") is None:
        return "no `ip` command (Debian: apt-get install iproute2)"
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add): run the tests as root"
    probe = f"signoff-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], check=True)
    return None


@dataclass(frozen=True)
class Host:
    """A network namespace (None: this machine's own, where the test runs) and its address."""

    namespace: str | None
    address: str

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run in this host's network namespace."""
        if self.namespace is None:
            return list(argv)
        return ["ip", "netns", "exec", self.namespace, *argv]


@dataclass
class Network:
    """A router and the hosts linked to it, all removed by `close`."""

    name: str = field(default_factory=lambda: f"so{random.randrange(16**4):04x}")
    hosts: list[Host] = field(default_factory=list)
    _cut: set[tuple[str, str]] = field(default_factory=set)
    _ends: list[str] = field(default_factory=list)
    _block: str = field(
        default_factory=lambda: "198.{}.{}".format(
            *divmod(random.randrange(18 * 256, 20 * 256), 256)
        )
    )
    """This network's /24, in 198.18.0.0/15 (RFC 2544's, for tests: no real network uses it);
    each link a /30 of it."""

    def __post_init__(self) -> None:
        self.router = f"{self.name}-router"
        _ip(None, "netns", "add", self.router)
        _ip(self.router, "link", "set", "lo", "up")
        subprocess.run(["ip", "netns", "exec", self.router, "sysctl", "-qw",
                        "net.ipv4.ip_forward=1"], check=True)  # fmt: skip

    def host(self, name: str | None) -> Host:
        """A new host (None: this machine's own namespace) linked to the router on a /30 of
        its own, reaching every other host through it."""
        n = len(self._ends)
        router_address = f"{self._block}.{4 * n + 1}"
        host = Host(None if name is None else f"{self.name}-{name}", f"{self._block}.{4 * n + 2}")
        if host.namespace is not None:
            _ip(None, "netns", "add", host.namespace)
            _ip(host.namespace, "link", "set", "lo", "up")
        end, router_end = f"{self.name}h{n}", f"{self.name}r{n}"
        _ip(None, "link", "add", end, "type", "veth", "peer", "name", router_end)
        self._ends.append(end)
        _ip(None, "link", "set", router_end, "netns", self.router)
        if host.namespace is not None:
            _ip(None, "link", "set", end, "netns", host.namespace)
        _ip(self.router, "addr", "add", f"{router_address}/30", "dev", router_end)
        _ip(host.namespace, "addr", "add", f"{host.address}/30", "dev", end)
        _ip(self.router, "link", "set", router_end, "up")
        _ip(host.namespace, "link", "set", end, "up")
        _ip(host.namespace, "route", "add", f"{self._block}.0/24", "via", router_address)
        self.hosts.append(host)
        return host

    def cut(self, one: Host, other: Host) -> None:
        """Partition two hosts: every packet between them dropped, both ways."""
        for pair in ((one.address, other.address), (other.address, one.address)):
            if pair not in self._cut:
                _ip(self.router, "rule", "add", "from", pair[0], "to", pair[1], "blackhole")
                self._cut.add(pair)

    def heal(self, one: Host, other: Host) -> None:
        """Remove the partition between two hosts."""
        for pair in ((one.address, other.address), (other.address, one.address)):
            if pair in self._cut:
                _ip(self.router, "rule", "del", "from", pair[0], "to", pair[1], "blackhole")
                self._cut.discard(pair)

    def close(self) -> None:
        for host in self.hosts:
            if host.namespace is not None:
                subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.router], capture_output=True)
        for end in self._ends:  # the end in this machine's own namespace outlives the others
            subprocess.run(["ip", "link", "del", end], capture_output=True)
        self.hosts.clear()


def _ip(namespace: str | None, *argv: str) -> None:
    prefix = [] if namespace is None else ["-n", namespace]
    subprocess.run(["ip", *prefix, *argv], check=True, capture_output=True)
