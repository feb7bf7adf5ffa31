"""Builders of the standard topologies and a registry to build them by name.

Naming and port conventions, shared by all builders:
- hosts h1..hN, numbered rack by rack (so hN has host index N, IP 10.0.0.0+N);
- switches are named by role with short prefixes so `<name>-eth<port>` stays within Linux's
  15 characters: star s1; dumbbell s1 (left) s2 (right); leaf-spine l<i>, s<i>;
  fat-tree e<i> (edge), a<i> (aggregation), c<i> (core);
- links are added host links first, then upward layer by layer, so on every switch the
  host-facing (down) ports come first, then the up ports, each in peer order:
  leaf: ports 1..hosts_per_leaf to hosts, then one per spine; spine: port i to leaf i;
  fat-tree edge: 1..k/2 hosts, k/2+1..k aggs; agg: 1..k/2 edges, k/2+1..k cores;
  core: port p+1 to pod p.
"""
from __future__ import annotations

import inspect
import math
import warnings
from typing import Any, Callable

from topologies.model import DEFAULT_BUFFER_BYTES, SWITCH, Link, Node, Topology, TopologyError
from topologies.params import MAX_LINKS, _buffer, _delay, _hosts, _int, _rate, _size  # noqa: F401
from topologies.rails import per_server, rail_optimized, server_params, servers_under


def star(hosts: int, host_rate_bps: float, delay_ns: int = 0,
         buffer_bytes: int = DEFAULT_BUFFER_BYTES) -> Topology:
    """`hosts` hosts on one switch s1 (port i to host hi)."""
    t = "star"
    n = _int(t, "hosts", hosts, 1)
    _size(t, n, f"hosts {n}")
    rate = _rate(t, "host_rate_bps", host_rate_bps)
    delay = _delay(t, "delay_ns", delay_ns)
    buf = _buffer(t, "buffer_bytes", buffer_bytes)
    hs = _hosts(n)
    links = [Link(h.name, "s1", rate, delay, buf) for h in hs]
    return Topology(f"star-{n}", [*hs, Node("s1", SWITCH, "switch")], links,
                    {"topology": "star", "hosts": n, "host_rate_bps": rate, "delay_ns": delay,
                     "buffer_bytes": buf})


def dumbbell(hosts_per_side: int, host_rate_bps: float, bottleneck_rate_bps: float,
             delay_ns: int = 0, bottleneck_delay_ns: int | None = None,
             buffer_bytes: int = DEFAULT_BUFFER_BYTES,
             bottleneck_buffer_bytes: int | None = None) -> Topology:
    """h1..hn on s1, h(n+1)..h2n on s2, one bottleneck link s1-s2 (port n+1 on both).
    The bottleneck delay and buffer default to the edge ones."""
    t = "dumbbell"
    n = _int(t, "hosts_per_side", hosts_per_side, 1)
    _size(t, 2 * n + 1, f"hosts_per_side {n}")
    edge = _rate(t, "host_rate_bps", host_rate_bps)
    neck = _rate(t, "bottleneck_rate_bps", bottleneck_rate_bps)
    delay = _delay(t, "delay_ns", delay_ns)
    ndelay = delay if bottleneck_delay_ns is None else _delay(t, "bottleneck_delay_ns",
                                                              bottleneck_delay_ns)
    buf = _buffer(t, "buffer_bytes", buffer_bytes)
    nbuf = buf if bottleneck_buffer_bytes is None else _buffer(t, "bottleneck_buffer_bytes",
                                                               bottleneck_buffer_bytes)
    left, right = _hosts(n), _hosts(n, first=n + 1)
    links = [Link(h.name, "s1", edge, delay, buf) for h in left]
    links += [Link(h.name, "s2", edge, delay, buf) for h in right]
    links.append(Link("s1", "s2", neck, ndelay, nbuf))
    nodes = [*left, *right, Node("s1", SWITCH, "left"), Node("s2", SWITCH, "right")]
    return Topology(f"dumbbell-{n}x2", nodes, links,
                    {"topology": "dumbbell", "hosts_per_side": n, "host_rate_bps": edge,
                     "bottleneck_rate_bps": neck, "delay_ns": delay,
                     "bottleneck_delay_ns": ndelay, "buffer_bytes": buf,
                     "bottleneck_buffer_bytes": nbuf})


def leaf_spine_uplink_rate(hosts_per_leaf: int, host_rate_bps: float, spines: int,
                           oversubscription: float) -> float:
    """Uplink rate giving this oversubscription:
    oversubscription = hosts_per_leaf * host_rate / (spines * uplink_rate)."""
    return hosts_per_leaf * host_rate_bps / (spines * oversubscription)


def uplink_rate(t: str, hosts_per_leaf: int, host_rate: int, spines: int, oversubscription,
                uplink_rate_bps) -> int:
    """The leaves' uplink rate, given (uplink_rate_bps) or from oversubscription (default 1.0)."""
    if oversubscription is not None and uplink_rate_bps is not None:
        raise TopologyError(f"{t}: give oversubscription or uplink_rate_bps, not both")
    if uplink_rate_bps is not None:
        return _rate(t, "uplink_rate_bps", uplink_rate_bps)
    ratio = 1.0 if oversubscription is None else oversubscription
    if (isinstance(ratio, bool) or not isinstance(ratio, (int, float))
            or not math.isfinite(ratio) or ratio <= 0):
        raise TopologyError(f"{t}: oversubscription must be a number > 0 "
                            f"(1.0 = non-blocking), got {oversubscription!r}")
    return _rate(t, "uplink_rate_bps (derived from oversubscription)",
                 leaf_spine_uplink_rate(hosts_per_leaf, host_rate, spines, ratio))


def leaf_spine(leaves: int, spines: int, hosts_per_leaf: int, host_rate_bps: float,
               oversubscription: float | None = None, uplink_rate_bps: float | None = None,
               delay_ns: int = 0, buffer_bytes: int = DEFAULT_BUFFER_BYTES, gpus_per_server: int = 1,
               nvlink_rate_bps: float | None = None, nvlink_delay_ns: int | None = None) -> Topology:
    """Two-tier Clos: every leaf l<i> connects to every spine s<j>; hosts_per_leaf hosts per
    leaf. Give either oversubscription (default 1.0, non-blocking) or uplink_rate_bps. With
    gpus_per_server G > 1 the hosts are GPUs of servers srv<i> (hosts_per_leaf / G under each
    leaf), each GPU with a NIC at host_rate_bps to the leaf and an NVLink to its server
    (nvlink_rate_bps, default 3.6e12; nvlink_delay_ns, default 0)."""
    t = "leaf-spine"
    nl = _int(t, "leaves", leaves, 1)
    ns = _int(t, "spines", spines, 1)
    nh = _int(t, "hosts_per_leaf", hosts_per_leaf, 1)
    g, nvrate, nvdelay = server_params(t, gpus_per_server, nvlink_rate_bps, nvlink_delay_ns)
    nsrv = per_server(t, "hosts_per_leaf", nh, g)
    _size(t, nl * (nh * (1 if g == 1 else 2) + ns), f"leaves {nl} x (hosts_per_leaf {nh} + spines {ns})")
    hrate = _rate(t, "host_rate_bps", host_rate_bps)
    up = uplink_rate(t, nh, hrate, ns, oversubscription, uplink_rate_bps)
    delay = _delay(t, "delay_ns", delay_ns)
    buf = _buffer(t, "buffer_bytes", buffer_bytes)

    hosts, servers, leaves_, links = [], [], [], []
    for i in range(nl):
        leaf = f"l{i + 1}"
        leaves_.append(Node(leaf, SWITCH, "leaf"))
        if g > 1:
            hs, sv, ls = servers_under(leaf, nsrv, g, i * nsrv + 1, hrate, (nvrate, nvdelay), delay, buf)
            hosts += hs
            servers += sv
            links += ls
            continue
        for h in _hosts(nh, first=i * nh + 1):
            hosts.append(h)
            links.append(Link(h.name, leaf, hrate, delay, buf))
    spines_ = [Node(f"s{j + 1}", SWITCH, "spine") for j in range(ns)]
    for leaf in leaves_:
        for sp in spines_:
            links.append(Link(leaf.name, sp.name, up, delay, buf))
    params = {"topology": "leaf-spine", "leaves": nl, "spines": ns,
              "hosts_per_leaf": nh, "host_rate_bps": hrate, "uplink_rate_bps": up,
              "oversubscription": nh * hrate / (ns * up), "delay_ns": delay,
              "buffer_bytes": buf}
    if g > 1:
        params.update(gpus_per_server=g, nvlink_rate_bps=nvrate, nvlink_delay_ns=nvdelay)
    return Topology(f"leaf-spine-{nl}x{ns}x{nh}" + (f"g{g}" if g > 1 else ""),
                    [*hosts, *servers, *leaves_, *spines_], links, params)


def fat_tree(k: int, host_rate_bps: float, delay_ns: int = 0,
             buffer_bytes: int = DEFAULT_BUFFER_BYTES, gpus_per_server: int = 1,
             nvlink_rate_bps: float | None = None, nvlink_delay_ns: int | None = None) -> Topology:
    """Standard k-ary fat tree (Al-Fares et al.): k pods of k/2 edge and k/2 aggregation
    switches, (k/2)^2 cores, k^3/4 hosts, all links at host_rate_bps. Aggregation switch j of every
    pod connects to cores j*k/2+1 .. (j+1)*k/2, so core c reaches each pod through one agg.
    With gpus_per_server G > 1 (dividing k/2) the hosts are GPUs of servers, as in leaf-spine."""
    t = "fat-tree"
    if isinstance(k, float) and k.is_integer():
        k = int(k)
    if isinstance(k, bool) or not isinstance(k, int) or k < 2 or k % 2:
        raise TopologyError(f"{t}: k must be an even integer >= 2, got {k!r}")
    g, nvrate, nvdelay = server_params(t, gpus_per_server, nvlink_rate_bps, nvlink_delay_ns)
    _size(t, 3 * k ** 3 // 4 * (1 if g == 1 else 2), f"k {k}")
    rate = _rate(t, "host_rate_bps", host_rate_bps)
    delay = _delay(t, "delay_ns", delay_ns)
    buf = _buffer(t, "buffer_bytes", buffer_bytes)
    half = k // 2
    nsrv = per_server(t, "k/2", half, g)

    hosts, servers, edges, aggs, links = [], [], [], [], []
    for pod in range(k):
        for e in range(half):
            edge = f"e{pod * half + e + 1}"
            edges.append(Node(edge, SWITCH, "edge", pod))
            if g > 1:
                hs, sv, ls = servers_under(edge, nsrv, g, (pod * half + e) * nsrv + 1, rate, (nvrate, nvdelay),
                                           delay, buf, pod)
                hosts += hs
                servers += sv
                links += ls
                continue
            first = (pod * half + e) * half + 1
            for h in _hosts(half, first=first, pod=pod):
                hosts.append(h)
                links.append(Link(h.name, edge, rate, delay, buf))
        aggs += [Node(f"a{pod * half + j + 1}", SWITCH, "agg", pod) for j in range(half)]
    cores = [Node(f"c{c + 1}", SWITCH, "core") for c in range(half * half)]
    for pod in range(k):
        pe, pa = edges[pod * half:(pod + 1) * half], aggs[pod * half:(pod + 1) * half]
        for e in pe:
            for a in pa:
                links.append(Link(e.name, a.name, rate, delay, buf))
    # Pod-major so that core ports come out in pod order (port p+1 -> pod p).
    for pod in range(k):
        for j in range(half):
            a = aggs[pod * half + j]
            for c in cores[j * half:(j + 1) * half]:
                links.append(Link(a.name, c.name, rate, delay, buf))
    params = {"topology": "fat-tree", "k": k, "host_rate_bps": rate, "delay_ns": delay, "buffer_bytes": buf}
    if g > 1:
        params.update(gpus_per_server=g, nvlink_rate_bps=nvrate, nvlink_delay_ns=nvdelay)
    return Topology(f"fat-tree-k{k}" + (f"g{g}" if g > 1 else ""), [*hosts, *servers, *edges, *aggs, *cores],
                    links, params)


BUILDERS: dict[str, Callable[..., Topology]] = {
    "star": star,
    "dumbbell": dumbbell,
    "leaf-spine": leaf_spine,
    "fat-tree": fat_tree,
    "rail-optimized": rail_optimized,
}


# Every topology names its host links' rate host_rate_bps; the names they had before.
RENAMED = {"star": {"rate_bps": "host_rate_bps"}, "fat-tree": {"rate_bps": "host_rate_bps"},
           "dumbbell": {"edge_rate_bps": "host_rate_bps"}}


class RenamedParameterWarning(UserWarning):
    """A topology parameter given by its old name, still accepted."""


def renamed(name: str, params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(params with old names replaced, a sentence for each): TopologyError if both the old
    and the new name are given."""
    key = name.replace("_", "-") if isinstance(name, str) else name
    out, said = dict(params), []
    for old, new in RENAMED.get(key, {}).items():
        if old in out:
            if new in out:
                raise TopologyError(f"{key}: give {new}, not both {new} and {old} (its old name)")
            out[new] = out.pop(old)
            said.append(f"{old} is now called {new} (every topology's name for the rate of its "
                        f"host links); {old} still works for now")
    return out, said


def build(name: str, **params: Any) -> Topology:
    """Build a topology by registry name ('star', 'dumbbell', 'leaf-spine', 'fat-tree';
    underscores are accepted for hyphens) from keyword parameters, e.g. from a spec file.
    A parameter's old name (RENAMED) is taken with a RenamedParameterWarning."""
    key = name.replace("_", "-") if isinstance(name, str) else name
    if key not in BUILDERS:
        raise TopologyError(f"unknown topology {name!r}; known: {', '.join(BUILDERS)}")
    params, said = renamed(key, params)
    for sentence in said:
        warnings.warn(f"{key}: {sentence}", RenamedParameterWarning, stacklevel=2)
    fn = BUILDERS[key]
    sig = inspect.signature(fn)
    allowed = list(sig.parameters)
    unknown = [p for p in params if p not in sig.parameters]
    if unknown:
        raise TopologyError(f"{key}: unknown parameter(s) {', '.join(unknown)}; "
                            f"allowed: {', '.join(allowed)}")
    missing = [p for p, v in sig.parameters.items()
               if v.default is inspect.Parameter.empty and p not in params]
    if missing:
        raise TopologyError(f"{key}: missing required parameter(s) {', '.join(missing)}; "
                            f"allowed: {', '.join(allowed)}")
    return fn(**params)


def builder_params(name: str) -> dict[str, Any]:
    """Parameters of a registered builder and their defaults (required ones map to None)."""
    key = name.replace("_", "-")
    if key not in BUILDERS:
        raise TopologyError(f"unknown topology {name!r}; known: {', '.join(BUILDERS)}")
    return {p: (None if v.default is inspect.Parameter.empty else v.default)
            for p, v in inspect.signature(BUILDERS[key]).parameters.items()}
