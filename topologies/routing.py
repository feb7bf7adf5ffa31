"""Routes of a topology: shortest paths by hop count (plain BFS), the equal-cost next hops
of every switch toward every host (what its route table holds), and path counts. `Topology`
mixes this in; the methods read only its nodes and ports.

Servers (`topologies.servers`) bend the rule in three ways: a server is never a transit node;
a GPU of a server is reached from the network only through its own NIC (the server's port of
its GPU index); and a server sends to GPU k of another server by its own NIC k."""
from __future__ import annotations

from collections import deque
from functools import cached_property


class ShortestPaths:
    def _bfs(self, src: str, through_hosts: bool = False, first: tuple[str, ...] | None = None
             ) -> dict[str, int]:
        """Hop distances from `src`. Unless through_hosts, hosts and servers (other than src)
        are not walked through; first: the only peers src is left by (a GPU's NIC)."""
        ports = self._ports
        kinds = self._by_name
        stop = () if through_hosts else self._servers
        dist = {src: 0}
        q = deque([src])
        if first is not None:
            dist.update(dict.fromkeys(first, 1))
            q = deque(first)
        while q:
            u = q.popleft()
            du = dist[u] + 1
            for p in ports[u]:
                v = p.peer
                if v in dist:
                    continue
                if not through_hosts and (kinds[v].is_host or v in stop):
                    continue
                dist[v] = du
                q.append(v)
        return dist

    def _target(self, host: str):
        """What a route toward `host` aims at: its switch, or for a server's GPU (server, the
        NIC's port number): it is entered by that NIC only."""
        nic = self._nic_of.get(host)
        return (nic[0], nic[2]) if nic else self._ports[host][0].peer

    @cached_property
    def _targets(self) -> dict:
        """`_target` of every host."""
        return {h: self._target(h) for h in self._hosts}

    @cached_property
    def _switch_dist(self) -> dict:
        """Hop distances over the switch graph toward every target (`_target`). Hosts have a
        single link so they are never transit nodes: distance to a host is 1 + distance to its
        switch, and one BFS per edge switch (not per host) builds every route table; this is
        what keeps a 1024-host fat tree fast. A server's GPU gets a BFS of its own, which
        leaves the server by that GPU's NIC."""
        out = {}
        for t in self._targets.values():
            if t in out:
                continue
            if isinstance(t, tuple):
                server, nic = t
                (peer,) = [p.peer for p in self._ports[server] if p.number == nic]
                out[t] = self._bfs(server, first=(peer,))
            else:
                out[t] = self._bfs(t)
        return out

    def _dist(self, u: str, d: dict) -> int | None:
        """u's distance in d; a server other than the target (never walked through) is one hop
        beyond its nearest neighbour."""
        if u in d:
            return d[u]
        near = [d[v] for v in self.neighbors(u) if v in d]
        return 1 + min(near) if near else None

    def _hops_toward(self, switch: str, target) -> tuple[int, ...]:
        """Egress ports of `switch` on shortest paths to `target` (switch is not its switch)."""
        d = self._switch_dist[target]
        want = self._dist(switch, d)
        if want is None:
            return ()
        want -= 1
        if not isinstance(target, tuple):
            return tuple(p.number for p in self._ports[switch] if p.peer in d and d[p.peer] == want)
        server, nic = target
        return tuple(p.number for p in self._ports[switch]
                     if p.peer in d and d[p.peer] == want and (p.peer != server or p.peer_port == nic))

    def equal_cost_next_hops(self, switch: str) -> dict[str, tuple[int, ...]]:
        """Route table of `switch`: dst host -> all egress ports on a shortest (hop-count) path
        toward it, ascending. ECMP / spray choose among these ports."""
        if switch not in self._switches:
            raise KeyError(f"{switch!r} is not a switch of topology {self.name}")
        cache = self.__dict__.setdefault("_route_cache", {})
        if switch not in cache:
            per_target: dict = {}
            table = {}
            own = self._own_nics(switch)
            targets, ports = self._targets, self._ports
            for h in self._hosts:
                hp = ports[h][0]
                if hp.peer == switch:
                    table[h] = (hp.peer_port,)
                    continue
                t = targets[h]
                if t not in per_target:
                    per_target[t] = self._hops_toward(switch, t)
                table[h] = per_target[t]
                if own:
                    nic = self._nic_of.get(h)
                    mine = own.get(nic[1]) if nic else None
                    if mine in table[h]:
                        table[h] = (mine,)   # the sender's NIC of the destination's GPU index
            cache[switch] = table
        return dict(cache[switch])

    def _own_nics(self, switch: str) -> dict[int, int]:
        """GPU index -> NIC port number, of a server; {} for a network switch."""
        if switch not in self._servers:
            return {}
        return {self._nic_of[g][1]: self._nic_of[g][2] for g in self.gpus(switch)}

    def routes(self) -> dict[str, dict[str, tuple[int, ...]]]:
        """equal_cost_next_hops for every switch."""
        return {s: self.equal_cost_next_hops(s) for s in self._switches}

    def _path_ends(self, src_host: str, dst_host: str):
        self._check_host(src_host)
        self._check_host(dst_host)
        return self._ports[src_host][0].peer, self._target(dst_host)

    def paths(self, src_host: str, dst_host: str) -> list[tuple[str, ...]]:
        """All shortest paths as node-name tuples from src_host to dst_host, in port order.
        Parallel links do not add paths here (they are the same node sequence); the route
        table lists each of their ports."""
        if src_host == dst_host:
            self._check_host(src_host)
            return [(src_host,)]
        s, target = self._path_ends(src_host, dst_host)
        t = target[0] if isinstance(target, tuple) else target
        d = self._switch_dist[target]
        out: list[tuple[str, ...]] = []

        def walk(u: str, du: int, acc: list[str]):
            if u == t:
                out.append((src_host, *acc, dst_host))
                return
            for v in self.neighbors(u):
                if d.get(v) == du - 1 and self._enters(u, v, target):
                    acc.append(v)
                    walk(v, du - 1, acc)
                    acc.pop()

        if s == t:
            return [(src_host, s, dst_host)]
        ds = self._dist(s, d)
        for v in self._first_hops(s, dst_host, d, ds):
            walk(v, ds - 1, [s, v])
        return out

    def _first_hops(self, s: str, dst_host: str, d: dict, ds: int) -> list[str]:
        """The peers src's switch `s` sends toward dst_host by (a server: its route)."""
        if s in self._servers:
            numbers = set(self.equal_cost_next_hops(s)[dst_host])
            return list(dict.fromkeys(p.peer for p in self._ports[s] if p.number in numbers))
        return [v for v in self.neighbors(s) if d.get(v) == ds - 1]

    def _enters(self, u: str, v: str, target) -> bool:
        """Whether a hop u -> v may be taken toward target: into a server only by the NIC."""
        if not isinstance(target, tuple) or v != target[0]:
            return True
        return any(p.peer == u for p in self._ports[v] if p.number == target[1])

    def count_paths(self, src_host: str, dst_host: str) -> int:
        """Number of shortest node paths, without listing them (cheap on large topologies)."""
        if src_host == dst_host:
            self._check_host(src_host)
            return 1
        s, target = self._path_ends(src_host, dst_host)
        t = target[0] if isinstance(target, tuple) else target
        d = self._switch_dist[target]
        memo = {t: 1}
        for u in sorted(d, key=d.__getitem__):   # nearest first: successors are done
            if u != t:
                memo[u] = sum(memo[v] for v in self.neighbors(u)
                              if d.get(v) == d[u] - 1 and self._enters(u, v, target))
        if s == t:
            return 1
        return sum(memo[v] for v in self._first_hops(s, dst_host, d, self._dist(s, d)))

    def hop_count(self, src_host: str, dst_host: str) -> int:
        """Links on a shortest path between two hosts."""
        if src_host == dst_host:
            self._check_host(src_host)
            return 0
        s, target = self._path_ends(src_host, dst_host)
        return self._dist(s, self._switch_dist[target]) + 2

    def oversubscription(self, switch: str) -> float:
        """Host-facing capacity over switch-facing capacity of `switch` (leaf or edge); a
        server's NICs count as host-facing."""
        def down(peer):
            return self._by_name[peer].is_host or peer in self._servers
        dn = sum(p.link.rate_bps for p in self._ports[switch] if down(p.peer))
        up = sum(p.link.rate_bps for p in self._ports[switch] if not down(p.peer))
        if not dn or not up:
            raise ValueError(f"{switch} needs both host-facing and switch-facing links")
        return dn / up
