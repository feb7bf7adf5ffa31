"""A discrete-event loop in virtual time (integer ns): a heap of (time, seq, callback, args)."""
import heapq
import itertools


class EventLoop:
    def __init__(self):
        self.now = 0
        self._heap = []
        self._seq = itertools.count()
        self.events = 0

    def at(self, t, callback, *args):
        """Run callback(*args) at virtual time t (never before now)."""
        heapq.heappush(self._heap, (t if t > self.now else self.now, next(self._seq), callback, args))

    def run(self, until=None, max_events=None):
        """Run events in time order until none is left, virtual time passes `until`, or
        `max_events` have run. Returns the virtual time reached."""
        heap, pop = self._heap, heapq.heappop
        budget = max_events if max_events is not None else -1
        while heap and budget != 0:
            if until is not None and heap[0][0] > until:
                self.now = until
                break
            t, _, callback, args = pop(heap)
            self.now = t
            callback(*args)
            self.events += 1
            budget -= 1
        return self.now

    def pending(self):
        return len(self._heap)
