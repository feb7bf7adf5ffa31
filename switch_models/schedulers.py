"""Schedulers: which queue of a port sends next. `queues_for(n_classes)` says how many queues
the port needs; `pick(port, eligible)` returns a queue index among `eligible`, a non-empty bit mask of the
queues whose head packet may go now (live and already arrived), so strict priority is one
bit trick rather than a scan."""
from switch_models.registry import Registry, require

SCHEDULERS = Registry("scheduler")


@SCHEDULERS.register("fifo")
class Fifo:
    """One queue in arrival order; classes still drive the queue manager's decisions."""

    stateless = True   # picks depend on nothing but the queues (a lone packet needs no pick)

    def __init__(self):
        pass

    def queues_for(self, n_classes):
        return 1

    def pick(self, port, eligible):
        return 0


@SCHEDULERS.register("strict")
class Strict:
    """Strict priority: the lowest-numbered queue with a live packet always goes first."""

    stateless = True

    def __init__(self):
        pass

    def queues_for(self, n_classes):
        return n_classes

    def pick(self, port, eligible):
        return (eligible & -eligible).bit_length() - 1


@SCHEDULERS.register("drr")
class Drr:
    """Deficit round robin (Shreedhar & Varghese): each backlogged queue may send up to its
    quantum of bytes a round, so classes share the link in proportion to their weights."""

    stateless = False  # deficits and the round-robin turn change with every pick

    def __init__(self, *, quantum=1514, weights=None):
        require(isinstance(quantum, int) and quantum >= 64, "drr", "quantum", "an integer >= 64 bytes")
        if weights is not None:
            require(isinstance(weights, (list, tuple)) and all(
                        isinstance(w, (int, float)) and not isinstance(w, bool)
                        and 0 < w < float("inf") for w in weights),
                    "drr", "weights", "a list of finite positive numbers, one per class")
        self.quantum = quantum
        self.weights = None if weights is None else tuple(weights)
        self.deficit = []
        self.turn = 0
        self.credited = False

    def queues_for(self, n_classes):
        if self.weights is not None:
            require(len(self.weights) == n_classes, "drr", "weights",
                    f"a list of {n_classes} numbers (one per class)")
        weights = self.weights or (1,) * n_classes
        self.quanta = [max(64, int(self.quantum * w)) for w in weights]
        self.deficit = [0] * n_classes
        return n_classes

    def pick(self, port, eligible):
        n = len(self.deficit)
        deficit = self.deficit
        while True:
            q = self.turn
            if eligible >> q & 1:
                if not self.credited:
                    deficit[q] += self.quanta[q]
                    self.credited = True
                size = port.head(q).size
                if deficit[q] >= size:
                    deficit[q] -= size
                    if port.qpkts[q] == 1:
                        deficit[q] = 0  # an emptied queue keeps no credit (DRR rule)
                        self._advance(n)
                    return q
            else:
                deficit[q] = 0
            self._advance(n)

    def _advance(self, n):
        self.turn = self.turn + 1 if self.turn + 1 < n else 0
        self.credited = False
