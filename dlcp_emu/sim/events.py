"""A discrete-event loop in virtual time (integer ns): a heap of (time, seq, callback, arg).

Each event calls callback(arg): one argument keeps the per-packet events (a packet arriving
at the far end of a link) as cheap as CPython allows; `at` takes any arguments."""
import heapq
import itertools
from typing import Callable, Protocol, runtime_checkable

FOREVER = 1 << 62


class _Stop(Exception):
    pass


def _stop(_):
    raise _Stop


def _call(packed):
    callback, args = packed
    callback(*args)


@runtime_checkable
class Loop(Protocol):
    """The event loop's surface, as the network and the hosts drive it: `EventLoop` here,
    `sim.native.NativeLoop` over the core's loop."""

    now: int       # virtual time, ns
    events: int    # events run so far

    def at(self, t: int, callback: Callable, *args) -> None:
        """Run callback(*args) at virtual time t (never before now)."""

    def stop(self) -> None:
        """End `run` once the events already due now have run."""

    def run(self, until: int | None = None, max_events: int | None = None) -> int:
        """Run events until none is left, `until` or `max_events`; the time reached."""

    def pending(self) -> int:
        """Events still waiting (0: nothing more will happen)."""


class EventLoop:
    def __init__(self):
        self.now = 0
        self._heap = []
        self._seq = itertools.count()
        self.events = 0

    def at(self, t, callback, *args):
        """Run callback(*args) at virtual time t (never before now)."""
        heapq.heappush(self._heap, (t if t > self.now else self.now, next(self._seq), _call, (callback, args)))

    def stop(self):
        """End `run` once the events already due now have run (by an event, so that the
        loop itself checks nothing per event)."""
        self.schedule(self.now, _stop, None)

    def schedule(self, t, callback, arg):
        """Run callback(arg) at virtual time t >= now (the caller guarantees it)."""
        heapq.heappush(self._heap, (t, next(self._seq), callback, arg))

    def run(self, until=None, max_events=None):
        """Run events in time order until none is left, virtual time passes `until`, or
        `max_events` have run. Returns the virtual time reached."""
        heap, pop = self._heap, heapq.heappop
        limit = FOREVER if until is None else until
        budget = -1 if max_events is None else max_events
        n = 0
        try:
            while heap and n != budget:
                if heap[0][0] > limit:
                    self.now = limit
                    break
                t, _, callback, arg = pop(heap)
                self.now = t
                callback(arg)
                n += 1
        except _Stop:
            pass
        finally:
            self.events += n
        return self.now

    def pending(self):
        return len(self._heap)
