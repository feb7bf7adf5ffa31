"""Routes of a topology: shortest paths by hop count (plain BFS), the equal-cost next hops
of every switch toward every host (what its route table holds), and path counts. `Topology`
mixes this in; the methods read only its nodes and ports."""
from __future__ import annotations

from collections import deque
from functools import cached_property


class ShortestPaths:
    def _bfs(self, src: str, through_hosts: bool = False) -> dict[str, int]:
        ports = self._ports
        kinds = self._by_name
        dist = {src: 0}
        q = deque([src])
        while q:
            u = q.popleft()
            du = dist[u] + 1
            for p in ports[u]:
                v = p.peer
                if v in dist:
                    continue
                if not through_hosts and kinds[v].is_host:
                    continue
                dist[v] = du
                q.append(v)
        return dist

    @cached_property
    def _switch_dist(self) -> dict[str, dict[str, int]]:
        """Hop distances over the switch graph, from every switch that has hosts. Hosts have a
        single link so they are never transit nodes: distance to a host is 1 + distance to its
        switch, and one BFS per edge switch (not per host) builds every route table; this is
        what keeps a 1024-host fat tree fast."""
        targets = dict.fromkeys(self._ports[h][0].peer for h in self._hosts)
        return {t: self._bfs(t) for t in targets}

    def _hops_toward(self, switch: str, target: str) -> tuple[int, ...]:
        """Egress ports of `switch` on shortest paths to switch `target` (switch != target)."""
        d = self._switch_dist[target]
        want = d[switch] - 1
        return tuple(p.number for p in self._ports[switch]
                     if p.peer in d and d[p.peer] == want)

    def equal_cost_next_hops(self, switch: str) -> dict[str, tuple[int, ...]]:
        """Route table of `switch`: dst host -> all egress ports on a shortest (hop-count) path
        toward it, ascending. ECMP / spray choose among these ports."""
        if switch not in self._switches:
            raise KeyError(f"{switch!r} is not a switch of topology {self.name}")
        cache = self.__dict__.setdefault("_route_cache", {})
        if switch not in cache:
            per_target: dict[str, tuple[int, ...]] = {}
            table = {}
            for h in self._hosts:
                hp = self._ports[h][0]
                t = hp.peer
                if t == switch:
                    table[h] = (hp.peer_port,)
                else:
                    if t not in per_target:
                        per_target[t] = self._hops_toward(switch, t)
                    table[h] = per_target[t]
            cache[switch] = table
        return dict(cache[switch])

    def routes(self) -> dict[str, dict[str, tuple[int, ...]]]:
        """equal_cost_next_hops for every switch."""
        return {s: self.equal_cost_next_hops(s) for s in self._switches}

    def _path_ends(self, src_host: str, dst_host: str):
        self._check_host(src_host)
        self._check_host(dst_host)
        return self._ports[src_host][0].peer, self._ports[dst_host][0].peer

    def paths(self, src_host: str, dst_host: str) -> list[tuple[str, ...]]:
        """All shortest paths as node-name tuples from src_host to dst_host, in port order.
        Parallel links do not add paths here (they are the same node sequence); the route
        table lists each of their ports."""
        if src_host == dst_host:
            self._check_host(src_host)
            return [(src_host,)]
        s, t = self._path_ends(src_host, dst_host)
        d = self._switch_dist[t]
        out: list[tuple[str, ...]] = []

        def walk(u: str, acc: list[str]):
            if u == t:
                out.append((src_host, *acc, dst_host))
                return
            for v in self.neighbors(u):
                if d.get(v) == d[u] - 1:
                    acc.append(v)
                    walk(v, acc)
                    acc.pop()

        walk(s, [s])
        return out

    def count_paths(self, src_host: str, dst_host: str) -> int:
        """Number of shortest node paths, without listing them (cheap on large topologies)."""
        if src_host == dst_host:
            self._check_host(src_host)
            return 1
        s, t = self._path_ends(src_host, dst_host)
        d = self._switch_dist[t]
        memo = {t: 1}
        for u in sorted(d, key=d.__getitem__):   # nearest first: successors are done
            if u != t:
                memo[u] = sum(memo[v] for v in self.neighbors(u) if d.get(v) == d[u] - 1)
        return memo[s]

    def hop_count(self, src_host: str, dst_host: str) -> int:
        """Links on a shortest path between two hosts."""
        if src_host == dst_host:
            self._check_host(src_host)
            return 0
        s, t = self._path_ends(src_host, dst_host)
        return self._switch_dist[t][s] + 2

    def oversubscription(self, switch: str) -> float:
        """Host-facing capacity over switch-facing capacity of `switch` (leaf or edge)."""
        down = sum(p.link.rate_bps for p in self._ports[switch] if self._by_name[p.peer].is_host)
        up = sum(p.link.rate_bps for p in self._ports[switch] if self._by_name[p.peer].is_switch)
        if not down or not up:
            raise ValueError(f"{switch} needs both host-facing and switch-facing links")
        return down / up
