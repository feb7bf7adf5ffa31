"""The compiled loop's housekeeping off its thread. Once a second the switch took its kernel
counters, wrote its queue samples and serialised its stats checkpoint on the loop's thread:
0.6-1.0 ms here (2.3 ms at worst on a busy machine), during which no frame left on time, and
the queue that stall leaves behind stands on a port fed at line rate (docs/fidelity.md). The
loop's thread now takes only what it alone may read (`Datapath.snapshot`: the model's
counters, ~0.3 ms) and hands the rest (`Datapath.record`, the kernel's counters) to this
thread, which runs while the compiled loop runs without the GIL.

The thread is an ordinary one (SCHED_OTHER), below the real-time loop: at the loop's own
priority, on the loop's CPU, it would keep the woken loop waiting until it yields, which is
the stall again. The GIL it may hold when the loop comes back for it is given up within the
switch interval, which the switch process sets short for that (`SWITCH_INTERVAL_S`)."""
import os
import queue
import threading

SWITCH_INTERVAL_S = 1e-4    # how long the loop may wait for the GIL the thread holds


class Housekeeper:
    def __init__(self, dp):
        self.dp = dp
        self.jobs = queue.SimpleQueue()
        self.failure = None
        self.thread = threading.Thread(target=self._run, name="housekeeping", daemon=True)
        self.thread.start()

    def submit(self, job):
        """A `Datapath.snapshot`, recorded in order of submission."""
        if self.failure is not None:
            raise RuntimeError("housekeeping failed") from self.failure
        self.jobs.put(job)

    def close(self):
        """Records every job submitted, then ends the thread; raises what failed there."""
        self.jobs.put(None)
        self.thread.join()
        if self.failure is not None:
            raise RuntimeError("housekeeping failed") from self.failure

    def _run(self):
        if hasattr(os, "sched_setscheduler"):
            try:   # pid 0: this thread; the loop's thread keeps its real-time class
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            except OSError:
                pass
        while (job := self.jobs.get()) is not None:
            try:
                self.dp.count_kernel()
                self.dp.record(job)
            except BaseException as e:   # kept for the loop's thread, which reports it
                self.failure = e
                return
