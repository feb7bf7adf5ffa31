"""Multi-GPU servers in a topology: a server is a switch node of role `server` (its
NVLink/NVSwitch-like fabric), its GPUs are hosts on links at the fabric's rate, and each GPU
has a NIC: a link from the server to the network.

The convention every builder keeps and `Topology` checks: a server's ports are first its G
GPUs, then their G NICs, in the same order, so GPU i (0-based, in port order) sends and
receives through port G + 1 + i. Hosts are numbered server by server, so host index N
(h<N>) is GPU (N - 1) % G of the (N - 1) // G-th server, and rank r placed `packed` runs on
GPU r % G of server r // G.

Routing (`topologies.routing`) keeps to it: traffic between GPUs of one server never leaves
it; a server is never a transit node between other nodes; traffic to GPU k of another server
leaves by the sender's NIC k and enters by the receiver's NIC k (the rail of the destination:
the sender first crosses its server's fabric to GPU k, as NCCL's PXN does).
"""
from __future__ import annotations

from functools import cached_property

SERVER = "server"   # Node.role of a server's internal fabric
GPU = "gpu"         # Node.role of a server's GPUs
#: What a server's fabric runs, whatever the experiment's switches run: a preset of
#: switch_models (FIFO drop-tail). The policy under test acts in the network, not inside a
#: server; the server's ports take their links' buffers.
SERVER_PIPELINE = "fifo"


class Servers:
    """Mixed into `Topology`: reads only its nodes and ports."""

    @cached_property
    def _servers(self) -> frozenset[str]:
        return frozenset(n.name for n in self.nodes if n.is_switch and n.role == SERVER)

    @cached_property
    def _nic_of(self) -> dict[str, tuple[str, int, int]]:
        """GPU host -> (its server, its GPU index, its NIC's port number on the server)."""
        out = {}
        for s in self._servers:
            ports = self._ports[s]
            gpus = [p for p in ports if self._by_name[p.peer].is_host]
            for i, p in enumerate(gpus):
                out[p.peer] = (s, i, ports[len(gpus) + i].number)
        return out

    def _check_servers(self):
        from topologies.model import TopologyError
        for s in sorted(self._servers):
            ports = self._ports[s]
            kinds = [self._by_name[p.peer].is_host for p in ports]
            g = sum(kinds)
            if g < 1 or len(ports) != 2 * g or kinds != [True] * g + [False] * g:
                raise TopologyError(
                    f"server {s} must have its GPUs (hosts) on its first ports and as many NICs "
                    f"(links to switches) after them, GPU i's NIC on port G+1+i; has "
                    f"{[p.peer for p in ports]}")

    def is_server(self, node: str) -> bool:
        """Whether `node` is a server's internal fabric (role `server`)."""
        return node in self._servers

    def pipeline_of(self, switch: str, pipeline):
        """The pipeline `switch` runs in a run of `pipeline`: SERVER_PIPELINE on a server."""
        return SERVER_PIPELINE if switch in self._servers else pipeline

    def role_of(self, switch: str) -> str:
        """`server` for a server's fabric, `switch` for a switch of the network (the ports
        table's role column)."""
        return SERVER if switch in self._servers else "switch"

    def server_of(self, host: str) -> str | None:
        """The server (switch of role `server`) a GPU host sits in; None for a host on a
        network switch (a single-GPU host is a server of its own)."""
        self._check_host(host)
        nic = self._nic_of.get(host)
        return nic[0] if nic else None

    def gpu_index(self, host: str) -> int:
        """The host's GPU index inside its server, 0..G-1 (its rail); 0 for a plain host."""
        self._check_host(host)
        nic = self._nic_of.get(host)
        return nic[1] if nic else 0

    def nic_port(self, host: str) -> tuple[str, int] | None:
        """(server, port number) of a GPU's NIC; None for a plain host."""
        self._check_host(host)
        nic = self._nic_of.get(host)
        return (nic[0], nic[2]) if nic else None

    def servers(self) -> list[str]:
        """Server names, in node order."""
        return [n.name for n in self.nodes if n.name in self._servers]

    def gpus(self, server: str) -> list[str]:
        """A server's GPU hosts, by GPU index."""
        if server not in self._servers:
            raise KeyError(f"{server!r} is not a server of topology {self.name}")
        return [p.peer for p in self._ports[server] if self._by_name[p.peer].is_host]
