"""One description of a topology: nodes, full-duplex links with rate/delay/buffer, and the
shortest-path route tables derived from them. The same object builds a Mininet `Topo` (for the
emulator) and exports a plain graph (for the simulator), so both worlds route identically.

Port numbers: a node's ports are numbered in the order its links appear in `Topology.links`,
starting at 1 on switches and 0 on hosts. This is exactly how Mininet's `Topo.addLink`
numbers ports (and so names interfaces `s1-eth1`, `h1-eth0`), because `to_mininet_topo` adds
the links in that same order and Mininet's `Net` keeps the port numbers the `Topo` assigned.

Addresses: the host at 1-based index N (its position in `hosts()`) gets 10.0.0.0 + N in a /8
and MAC N as 48 bits, which is what Mininet itself would assign (`ipAdd`, `macColonHex`), so a
host with 300 peers gets e.g. 10.0.1.44 and 00:00:00:00:01:2c.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, NamedTuple

from topologies.routing import ShortestPaths
from topologies.servers import Servers

HOST = "host"
SWITCH = "switch"
KINDS = (HOST, SWITCH)

#: Per-port egress buffer when a builder is not told otherwise.
DEFAULT_BUFFER_BYTES = 256 * 1024
#: A buffer must hold at least one full Ethernet frame, or every full-size packet is dropped
#: (the switch's EgressPort enforces the same floor).
MIN_BUFFER_BYTES = 1514

IP_BASE = 10 << 24          # 10.0.0.0
IP_PREFIX_LEN = 8
MAX_HOSTS = (1 << (32 - IP_PREFIX_LEN)) - 2   # leave out the /8's network and broadcast
IFNAMSIZ = 15               # Linux interface names: 16 bytes including the NUL

# No '-' (Mininet appends '-eth<N>' and splits on it), nothing a shell or ip(8) would mangle.
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class TopologyError(ValueError):
    """A topology or builder parameter is invalid. A ValueError, so callers may catch either."""


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_rate(field_name: str, v) -> int:
    """A link rate in bit/s: a positive finite number, stored as an int (1 bit/s is plenty of
    resolution and keeps the simulator's arithmetic exact)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise TopologyError(f"{field_name} must be a number > 0 (bit/s), got {v!r}")
    r = int(round(v))
    if r < 1:
        raise TopologyError(f"{field_name} must be >= 1 bit/s, got {v!r}")
    return r


def check_int(field_name: str, v, lo: int, what: str = "") -> int:
    """An integer >= lo; integral floats (1e6 from JSON) are accepted, bools are not."""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not _is_int(v) or v < lo:
        raise TopologyError(f"{field_name} must be an integer >= {lo}{what}, got {v!r}")
    return v


@dataclass(frozen=True)
class Node:
    name: str
    kind: str                 # "host" | "switch"
    role: str = ""            # builder's role: host, gpu, server, leaf, spine, edge, agg, core, ...
    pod: int | None = None    # fat-tree pod (0-based); None elsewhere

    def __post_init__(self):
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise TopologyError(
                f"node name {self.name!r} must match [A-Za-z][A-Za-z0-9_]* "
                "(it prefixes Linux interface names)")
        if self.kind not in KINDS:
            raise TopologyError(f"node {self.name}: kind must be one of {KINDS}, got {self.kind!r}")
        if not self.role:
            object.__setattr__(self, "role", self.kind)

    @property
    def is_host(self) -> bool:
        return self.kind == HOST

    @property
    def is_switch(self) -> bool:
        return self.kind == SWITCH


@dataclass(frozen=True)
class Link:
    """A full-duplex link. rate and delay hold in each direction; buffer_bytes is the egress
    buffer of each end's port (the switch end is where it matters)."""
    a: str
    b: str
    rate_bps: int
    delay_ns: int = 0
    buffer_bytes: int = DEFAULT_BUFFER_BYTES

    def __post_init__(self):
        if self.a == self.b:
            raise TopologyError(f"link {self.a}-{self.b}: a link needs two different ends")
        where = f"link {self.a}-{self.b}: "
        object.__setattr__(self, "rate_bps", check_rate(where + "rate_bps", self.rate_bps))
        object.__setattr__(self, "delay_ns", check_int(where + "delay_ns", self.delay_ns, 0))
        object.__setattr__(self, "buffer_bytes", check_int(
            where + "buffer_bytes", self.buffer_bytes, MIN_BUFFER_BYTES, " (one full frame)"))

    def other(self, node: str) -> str:
        if node == self.a:
            return self.b
        if node == self.b:
            return self.a
        raise KeyError(f"{node} is not an end of link {self.a}-{self.b}")

    def params(self) -> dict[str, int]:
        return {"rate_bps": self.rate_bps, "delay_ns": self.delay_ns,
                "buffer_bytes": self.buffer_bytes}


class Port(NamedTuple):
    """One end of a link as seen from its node."""
    number: int
    peer: str
    peer_port: int
    link: Link


@dataclass(frozen=True)
class Topology(ShortestPaths, Servers):
    name: str
    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    # How it was built (builder name and parameters): recorded with a run, not used to route.
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self):
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "links", tuple(self.links))
        object.__setattr__(self, "params", dict(self.params))
        self._validate()

    # ---- construction checks -------------------------------------------------------------
    def _validate(self):
        seen: dict[str, Node] = {}
        for n in self.nodes:
            if not isinstance(n, Node):
                raise TopologyError(f"nodes must be Node objects, got {n!r}")
            if n.name in seen:
                raise TopologyError(f"duplicate node name {n.name!r}")
            seen[n.name] = n
        for l in self.links:
            if not isinstance(l, Link):
                raise TopologyError(f"links must be Link objects, got {l!r}")
            for end in (l.a, l.b):
                if end not in seen:
                    raise TopologyError(f"link {l.a}-{l.b}: unknown node {end!r}")
        ports = self._ports
        n_hosts = 0
        for n in self.nodes:
            p = ports[n.name]
            if n.is_host:
                n_hosts += 1
                # One NIC per host: its IP/MAC and its route are then unambiguous.
                if len(p) != 1 or not seen[p[0].peer].is_switch:
                    raise TopologyError(
                        f"host {n.name} must have exactly one link, to a switch "
                        f"(has {[q.peer for q in p]})")
            last = p[-1].number if p else (1 if n.is_switch else 0)
            ifname = f"{n.name}-eth{last}"
            if len(ifname) > IFNAMSIZ:
                raise TopologyError(
                    f"node {n.name}: interface name {ifname!r} is longer than {IFNAMSIZ} "
                    "characters (Linux limit); use a shorter node name")
        self._check_servers()
        if n_hosts > MAX_HOSTS:
            raise TopologyError(f"at most {MAX_HOSTS} hosts fit the 10.0.0.0/8 plan, got {n_hosts}")
        if self.nodes:
            reached = self._bfs(self.nodes[0].name, through_hosts=True)
            missing = [n.name for n in self.nodes if n.name not in reached]
            if missing:
                raise TopologyError(
                    f"topology {self.name} is not connected: cannot reach {missing[:5]}"
                    + (" ..." if len(missing) > 5 else ""))

    # ---- nodes ---------------------------------------------------------------------------
    @cached_property
    def _by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}

    def node(self, name: str) -> Node:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no node {name!r} in topology {self.name}") from None

    @cached_property
    def _hosts(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes if n.is_host)

    @cached_property
    def _switches(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes if n.is_switch)

    def hosts(self) -> list[str]:
        """Host names in index order (host_ip/host_mac number them 1.. in this order)."""
        return list(self._hosts)

    def switches(self) -> list[str]:
        return list(self._switches)

    # ---- ports ---------------------------------------------------------------------------
    @cached_property
    def _link_ports(self) -> list[tuple[int, int]]:
        """(port on a, port on b) for each link, by link index. Walks links in order and gives
        each end its next port number: the same rule as mininet.topo.Topo.addPort (switch
        ports from 1, host ports from 0)."""
        kinds = {n.name: n.kind for n in self.nodes}
        used = dict.fromkeys(kinds, 0)
        out = []
        for l in self.links:
            pa = used[l.a] + (1 if kinds[l.a] == SWITCH else 0)
            pb = used[l.b] + (1 if kinds[l.b] == SWITCH else 0)
            used[l.a] += 1
            used[l.b] += 1
            out.append((pa, pb))
        return out

    @cached_property
    def _ports(self) -> dict[str, list[Port]]:
        out: dict[str, list[Port]] = {n.name: [] for n in self.nodes}
        for l, (pa, pb) in zip(self.links, self._link_ports):
            out[l.a].append(Port(pa, l.b, pb, l))
            out[l.b].append(Port(pb, l.a, pa, l))
        return out

    def ports(self, node: str) -> list[Port]:
        """All ports of any node (hosts included), in port-number order."""
        self.node(node)
        return list(self._ports[node])

    def port_map(self) -> dict[str, list[tuple[int, str, Link]]]:
        """For each switch: [(port number, peer name, link), ...] in port order."""
        return {s: [(p.number, p.peer, p.link) for p in self._ports[s]] for s in self._switches}

    def ports_to(self, node: str, peer: str) -> tuple[int, ...]:
        """Port numbers on `node` whose link goes to `peer` (several if links are parallel)."""
        self.node(node)
        return tuple(p.number for p in self._ports[node] if p.peer == peer)

    @staticmethod
    def intf_name(node: str, port: int) -> str:
        """The interface Mininet creates for this port."""
        return f"{node}-eth{port}"

    def neighbors(self, node: str) -> list[str]:
        """Distinct peers of `node`, in port order."""
        self.node(node)
        return list(dict.fromkeys(p.peer for p in self._ports[node]))

    def attached_switch(self, host: str) -> tuple[str, int]:
        """(switch, switch port) the host hangs off."""
        self._check_host(host)
        p = self._ports[host][0]
        return p.peer, p.peer_port

    # ---- addresses -----------------------------------------------------------------------
    @cached_property
    def _host_index(self) -> dict[str, int]:
        return {h: i for i, h in enumerate(self._hosts, start=1)}

    def _check_host(self, host: str):
        if host not in self._host_index:
            raise KeyError(f"{host!r} is not a host of topology {self.name}")

    def host_index(self, host: str) -> int:
        """1-based index of the host, the N in its IP and MAC."""
        self._check_host(host)
        return self._host_index[host]

    def host_ip(self, host: str, with_prefix: bool = False) -> str:
        """10.0.0.0 + N (e.g. 10.0.0.7, 10.0.1.44 for N=300); '/8' appended if asked."""
        v = IP_BASE + self.host_index(host)
        ip = ".".join(str((v >> s) & 0xFF) for s in (24, 16, 8, 0))
        return f"{ip}/{IP_PREFIX_LEN}" if with_prefix else ip

    def host_mac(self, host: str) -> str:
        """N as a 48-bit MAC: 00:00:00:00:00:07, 00:00:00:00:01:2c for N=300."""
        v = self.host_index(host)
        return ":".join(f"{(v >> s) & 0xFF:02x}" for s in range(40, -8, -8))

    @cached_property
    def _by_ip(self) -> dict[str, str]:
        return {self.host_ip(h): h for h in self._hosts}

    @cached_property
    def _by_mac(self) -> dict[str, str]:
        return {self.host_mac(h): h for h in self._hosts}

    def host_by_ip(self, ip: str) -> str:
        return self._by_ip[ip.split("/")[0]]

    def host_by_mac(self, mac: str) -> str:
        return self._by_mac[mac.lower()]

    # ---- exports -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-serialisable description; `from_dict` rebuilds the same Topology.
        Hosts carry their ip/mac and links their port numbers for readers' convenience
        (derived, ignored by from_dict)."""
        nodes = []
        for n in self.nodes:
            d: dict[str, Any] = {"name": n.name, "kind": n.kind, "role": n.role, "pod": n.pod}
            if n.is_host:
                d["ip"] = self.host_ip(n.name)
                d["mac"] = self.host_mac(n.name)
            nodes.append(d)
        links = [{"a": l.a, "b": l.b, **l.params(), "port_a": pa, "port_b": pb}
                 for l, (pa, pb) in zip(self.links, self._link_ports)]
        return {"name": self.name, "params": dict(self.params), "nodes": nodes, "links": links}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Topology":
        nodes = [Node(n["name"], n["kind"], n.get("role", ""), n.get("pod")) for n in d["nodes"]]
        links = [Link(l["a"], l["b"], l["rate_bps"], l.get("delay_ns", 0),
                      l.get("buffer_bytes", DEFAULT_BUFFER_BYTES)) for l in d["links"]]
        return cls(d["name"], nodes, links, d.get("params", {}))

    def adjacency(self) -> dict[str, list[dict[str, Any]]]:
        """Simulator graph: node -> its ports in order, each with peer, peer_port and the
        link's rate_bps, delay_ns, buffer_bytes."""
        return {name: [{"port": p.number, "peer": p.peer, "peer_port": p.peer_port,
                        **p.link.params()} for p in ps]
                for name, ps in self._ports.items()}

    def to_mininet_topo(self, switch_opts: Mapping[str, Any] | None = None,
                        host_opts: Mapping[str, Any] | None = None,
                        link_opts: Mapping[str, Any] | None = None):
        """A mininet.topo.Topo with the same nodes and links, added in our order so that
        Mininet's port numbers (and interface names) are ours.

        - hosts get ip (with /8) and mac from host_ip/host_mac, overriding host_opts, so that
          the route tables and the hosts agree;
        - switches get a unique dpid (their 1-based switch index): Mininet would otherwise
          derive it from the digits in the name, and l1 and s1 would collide;
        - every link gets rate_bps, delay_ns, buffer_bytes as link options. Mininet hands
          link options to both interfaces, so the switch reads them from `intf.params`, and
          the Topo from `linkInfo(a, b)`. No tc `bw`/`delay` is set: the switch paces its
          egress itself. link_opts (e.g. cls=...) are added to every link.
        mininet is imported here so that the simulator needs no Mininet installed.
        """
        from mininet.topo import Topo

        class DescribedTopo(Topo):
            """A Topo that remembers the Topology it was made from (`.topology`)."""

            def build(self, topology: Topology):
                self.topology = topology
                for i, s in enumerate(topology._switches, start=1):
                    self.addSwitch(s, **{**(switch_opts or {}), "dpid": f"{i:016x}"})
                for h in topology._hosts:
                    self.addHost(h, **{**(host_opts or {}),
                                       "ip": topology.host_ip(h, with_prefix=True),
                                       "mac": topology.host_mac(h)})
                for l in topology.links:
                    self.addLink(l.a, l.b, **{**(link_opts or {}), **l.params()})

        return DescribedTopo(self)

    def summary(self) -> str:
        return (f"{self.name}: {len(self._hosts)} hosts, {len(self._switches)} switches, "
                f"{len(self.links)} links")

