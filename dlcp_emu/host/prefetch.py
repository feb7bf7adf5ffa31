"""Synthetic gradients drawn ahead of need, on threads of their own (simulated runs).

With the network in the compiled core, numpy's draws of the synthetic gradients were a third
of a simulated run's wall time (`dlcp-emu bench sim`). The core runs the network with the GIL
released, and numpy fills its arrays with it released too, so a rank's next bucket can be
drawn while the core moves the packets of the bucket before: each worker asks for the bucket
it will begin next (`ask`) as it begins one, and takes it when it begins it (`take`). The
values are the same whenever and wherever they are drawn (`plan.gradient` seeds its own
generator from the run's seed, the rank, the iteration and the bucket), so a run's results
do not depend on the thread; at most one bucket a rank waits ahead, which the spec's memory
check (every rank's whole gradient at once) already covers.
"""
import os
from concurrent.futures import ThreadPoolExecutor


def default_threads():
    """Two, where the process may use two cores: a run's ranks begin their first buckets
    together, before the network has anything to overlap them with, and with one thread they
    waited their turn (0.08 s of the default spec's 0.4 s run, against 0.04 s with two)."""
    return min(2, len(os.sched_getaffinity(0)))


class Prefetch:
    """Worker threads; results by key. Use as a context manager, or `close` it."""

    def __init__(self, threads=None):
        self._pool = ThreadPoolExecutor(max_workers=threads or default_threads(), thread_name_prefix="gradients")
        self._ahead = {}

    def ask(self, key, fn, *args):
        """Start computing fn(*args) for `key` (once; a key asked again keeps the first)."""
        if key not in self._ahead:
            self._ahead[key] = self._pool.submit(fn, *args)

    def take(self, key, fn, *args):
        """fn(*args) for `key`: what the thread computed (waiting for it if it is under way),
        or computed here if it was not asked for or not yet started."""
        future = self._ahead.pop(key, None)
        if future is None or future.cancel():
            return fn(*args)
        return future.result()

    def pending(self):
        """Keys asked for and not yet taken."""
        return set(self._ahead)

    def close(self):
        """Drop what was not started, wait for what is under way."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._ahead.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
