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


@LOAD_BALANCERS.register("spray")
class Spray:
    """Per-packet spraying (DLCP, NDP): round robin per candidate set, or uniform random."""

    def __init__(self, *, mode="round-robin", seed=0):
        require(mode in ("round-robin", "random"), "spray", "mode", "'round-robin' or 'random'")
        self.random = mode == "random"
        self.rng = random.Random(seed)
        self.next = {}

    def choose(self, pkt, candidates):
        n = len(candidates)
        if n == 1:
            return candidates[0]
        if self.random:
            return candidates[self.rng.randrange(n)]
        i = self.next.get(candidates, 0)
        self.next[candidates] = i + 1 if i + 1 < n else 0
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
