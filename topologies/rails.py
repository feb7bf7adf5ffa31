"""Multi-GPU servers (`topologies.servers`) and the rail-optimized fabric: GPU i of every
server has its NIC on rail i's leaf.

Names: servers srv<i> (role `server`), their GPUs h<N> (role `gpu`) numbered server by
server; rail-optimized leaves l<p*G+i+1> (rail i of pod p, role `leaf`, pod p), spines s<j>.
"""
from __future__ import annotations

from topologies.model import DEFAULT_BUFFER_BYTES, SWITCH, Link, Node, Topology, TopologyError
from topologies.params import _buffer, _delay, _hosts, _int, _rate, _size
from topologies.servers import GPU, SERVER

#: An NVLink 4 GPU's bandwidth each way (H100: 900 GB/s both ways), bit/s.
NVLINK_RATE_BPS = 3.6e12


def server_params(t: str, gpus_per_server, nvlink_rate_bps, nvlink_delay_ns) -> tuple[int, int, int]:
    """(G, NVLink rate, NVLink delay), checked; the NVLink fields only with G > 1 (None: their
    defaults)."""
    g = _int(t, "gpus_per_server", gpus_per_server, 1)
    if g == 1:
        for name, v in (("nvlink_rate_bps", nvlink_rate_bps), ("nvlink_delay_ns", nvlink_delay_ns)):
            if v is not None:
                raise TopologyError(f"{t}: {name} applies only with gpus_per_server > 1 (got 1)")
        return 1, 0, 0
    rate = _rate(t, "nvlink_rate_bps", NVLINK_RATE_BPS if nvlink_rate_bps is None else nvlink_rate_bps)
    delay = _delay(t, "nvlink_delay_ns", 0 if nvlink_delay_ns is None else nvlink_delay_ns)
    return g, rate, delay


def per_server(t: str, field: str, hosts: int, g: int) -> int:
    """Servers in `hosts` GPUs of `field`; an error unless G divides it."""
    if hosts % g:
        raise TopologyError(f"{t}: gpus_per_server ({g}) must divide {field} ({hosts}), the GPUs "
                            "under each switch")
    return hosts // g


def server(index: int, g: int, first_gpu: int, nics: list[str], nic_rate: int, nvlink: tuple[int, int],
           delay: int, buf: int, pod: int | None = None) -> tuple[list[Node], Node, list[Link]]:
    """(GPUs, the server, its links): server srv<index> with GPUs h<first_gpu>.. on NVLink
    links, then GPU i's NIC to nics[i], in that order (the port convention of servers)."""
    name = f"srv{index}"
    gpus = _hosts(g, first=first_gpu, pod=pod)
    gpus = [Node(h.name, h.kind, GPU, pod) for h in gpus]
    links = [Link(h.name, name, nvlink[0], nvlink[1], buf) for h in gpus]
    links += [Link(name, peer, nic_rate, delay, buf) for peer in nics]
    return gpus, Node(name, SWITCH, SERVER, pod), links


def servers_under(switch: str, n: int, g: int, first: int, nic_rate: int, nvlink: tuple[int, int],
                  delay: int, buf: int, pod: int | None = None):
    """(GPUs, servers, links) of n servers of g GPUs with every NIC on `switch`; first: the
    index of the first server (its GPUs from h<(first-1)*g+1>)."""
    gpus, servers, links = [], [], []
    for i in range(first, first + n):
        hs, sv, ls = server(i, g, (i - 1) * g + 1, [switch] * g, nic_rate, nvlink, delay, buf, pod)
        gpus += hs
        servers.append(sv)
        links += ls
    return gpus, servers, links


def rail_optimized(servers: int, gpus_per_server: int, nic_rate_bps: float, pods: int = 1,
                   spines: int = 1, nvlink_rate_bps: float = NVLINK_RATE_BPS, nvlink_delay_ns: int = 0,
                   oversubscription: float | None = None, uplink_rate_bps: float | None = None,
                   delay_ns: int = 0, buffer_bytes: int = DEFAULT_BUFFER_BYTES) -> Topology:
    """Servers of gpus_per_server GPUs on an NVLink fabric, GPU i's NIC on rail i's leaf of
    its pod (servers split evenly over pods, one leaf per rail and pod); every leaf connects
    to every spine (global spines). Traffic between GPUs of a server stays in it; to another
    server it travels on the destination GPU's rail. Give either oversubscription (leaf
    NIC capacity over spine capacity, default 1.0) or uplink_rate_bps."""
    from topologies.builders import uplink_rate

    t = "rail-optimized"
    ns = _int(t, "servers", servers, 1)
    g = _int(t, "gpus_per_server", gpus_per_server, 1)
    np_ = _int(t, "pods", pods, 1)
    nsp = _int(t, "spines", spines, 1)
    if ns % np_:
        raise TopologyError(f"{t}: servers ({ns}) must divide evenly into pods ({np_})")
    per_pod = ns // np_
    _size(t, ns * 3 * g + np_ * g * nsp, f"servers {ns} x gpus_per_server {g} and {np_ * g} leaves x spines {nsp}")
    nic = _rate(t, "nic_rate_bps", nic_rate_bps)
    nvlink = (_rate(t, "nvlink_rate_bps", nvlink_rate_bps), _delay(t, "nvlink_delay_ns", nvlink_delay_ns))
    up = uplink_rate(t, per_pod, nic, nsp, oversubscription, uplink_rate_bps)
    delay = _delay(t, "delay_ns", delay_ns)
    buf = _buffer(t, "buffer_bytes", buffer_bytes)
    gpus, servers_, leaves, links = [], [], [], []
    for pod in range(np_):
        rail_leaves = [f"l{pod * g + i + 1}" for i in range(g)]
        leaves += [Node(name, SWITCH, "leaf", pod) for name in rail_leaves]
        for k in range(per_pod):
            index = pod * per_pod + k + 1
            hs, sv, ls = server(index, g, (index - 1) * g + 1, rail_leaves, nic, nvlink, delay, buf, pod)
            gpus += hs
            servers_.append(sv)
            links += ls
    spines_ = [Node(f"s{j + 1}", SWITCH, "spine") for j in range(nsp)]
    links += [Link(leaf.name, sp.name, up, delay, buf) for leaf in leaves for sp in spines_]
    return Topology(f"rail-{ns}x{g}-p{np_}", [*gpus, *servers_, *leaves, *spines_], links,
                    {"topology": t, "servers": ns, "gpus_per_server": g, "pods": np_, "spines": nsp,
                     "nic_rate_bps": nic, "nvlink_rate_bps": nvlink[0], "nvlink_delay_ns": nvlink[1],
                     "uplink_rate_bps": up, "oversubscription": per_pod * nic / (nsp * up),
                     "delay_ns": delay, "buffer_bytes": buf})
