"""How late things happened against their schedule, as a bounded histogram."""

class Lateness:
    """How late frames left against the model's schedule, as a log-spaced histogram: values
    are appended to a plain list in the hot path and folded in with numpy now and then, so
    memory stays bounded and the per-packet cost is one list append."""

    PER_DECADE = 50

    def __init__(self):
        import numpy as np
        self.np = np
        # Bin 0 holds [0, 100 ns); then 50 bins a decade up to 1000 s.
        self.edges = np.concatenate(([0.0], np.logspace(2, 12, 10 * self.PER_DECADE + 1)))
        self.counts = np.zeros(len(self.edges) - 1, dtype=np.int64)
        self.pending = []
        self.n = 0
        self.total = 0
        self.max = 0
        self.above = 0          # packets later than the threshold
        self.threshold = 0

    def fold(self):
        if not self.pending:
            return
        a = self.np.asarray(self.pending, dtype=self.np.int64)
        self.pending.clear()
        self.add(a)

    def add(self, a):
        """Fold in an array of values at once (what the compiled loop measured)."""
        if not len(a):
            return
        np = self.np
        a = np.maximum(a, 0)
        self.n += len(a)
        self.total += int(a.sum())
        self.max = max(self.max, int(a.max()))
        self.above += int((a > self.threshold).sum())
        a = np.minimum(a, self.edges[-1] - 1)
        self.counts += np.histogram(a, bins=self.edges)[0]

    def merge(self, counts, n, total, largest, above):
        """Fold in what a compiled loop binned itself (`dlcp_native.datapath.Histogram.take`:
        these edges and threshold), as `add` of the same values would."""
        if not n:
            return
        self.counts += counts
        self.n += n
        self.total += total
        self.max = max(self.max, largest)
        self.above += above

    def percentile(self, q):
        """Upper edge of the bin holding the q-th percentile (within 5%), capped at the max."""
        if not self.n:
            return None
        rank = q / 100 * self.n
        cum = self.np.cumsum(self.counts)
        i = int(self.np.searchsorted(cum, rank, side="left"))
        i = min(i, len(self.counts) - 1)
        return int(min(self.edges[i + 1], self.max))

    def summary(self):
        self.fold()
        return {"count": self.n,
                "mean_ns": round(self.total / self.n) if self.n else None,
                "p50_ns": self.percentile(50), "p99_ns": self.percentile(99),
                "p999_ns": self.percentile(99.9), "max_ns": self.max if self.n else None,
                "above_threshold": self.above, "threshold_ns": self.threshold}
