"""Load balancers: pick one egress port among the equal-cost candidates of a route.

`choose(pkt, candidates)` gets a non-empty tuple of EgressPort objects and returns one.
"""
import random

from switch_models.registry import Registry, require

LOAD_BALANCERS = Registry("load balancer")
_MASK64 = (1 << 64) - 1


@LOAD_BALANCERS.register("single")
class Single:
    """Always the first candidate: one path, as a plain L2 switch would take."""

    def __init__(self, *, seed=0):
        pass

    def choose(self, pkt, candidates):
        return candidates[0]


@LOAD_BALANCERS.register("ecmp")
class Ecmp:
    """Flow hash: every packet of a flow takes one path. The per-switch salt keeps hops from
    making the same choice (hash polarisation)."""

    def __init__(self, *, seed=0):
        self.salt = (seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & _MASK64

    def choose(self, pkt, candidates):
        n = len(candidates)
        if n == 1:
            return candidates[0]
        h = ((pkt.flow ^ self.salt) * 0xBF58476D1CE4E5B9) & _MASK64
        return candidates[(h >> 29) % n]


SPRAY_MODES = ("round-robin", "flow-round-robin", "random")


@LOAD_BALANCERS.register("spray")
class Spray:
    """Per-packet spraying (DLCP, NDP): round robin per candidate set, or uniform random; or
    `flow-round-robin`, round robin per candidate set and flow: each flow takes its paths in
    turn whatever the others do, as a source spraying its own packets over its paths (htsim's
    NDP, `-strat perm`). One turn for all flows can pin two flows that arrive alternately at a
    switch each to one path."""

    def __init__(self, *, mode="round-robin", seed=0):
        require(mode in SPRAY_MODES, "spray", "mode", "'round-robin', 'flow-round-robin' or 'random'")
        self.random = mode == "random"
        self.per_flow = mode == "flow-round-robin"
        self.rng = random.Random(seed)
        self.next = {}

    def choose(self, pkt, candidates):
        n = len(candidates)
        if n == 1:
            return candidates[0]
        if self.random:
            return candidates[self.rng.randrange(n)]
        key = (candidates, pkt.flow) if self.per_flow else candidates
        i = self.next.get(key, 0)
        self.next[key] = i + 1 if i + 1 < n else 0
        return candidates[i]


@LOAD_BALANCERS.register("least-loaded")
class LeastLoaded:
    """The candidate with the fewest queued bytes; ties go round robin so none is favoured."""

    def __init__(self, *, seed=0):
        self.turn = 0

    def choose(self, pkt, candidates):
        n = len(candidates)
        if n == 1:
            return candidates[0]
        self.turn += 1
        best = None
        for k in range(n):
            port = candidates[(self.turn + k) % n]
            if best is None or port.bytes < best.bytes:
                best = port
        return best
