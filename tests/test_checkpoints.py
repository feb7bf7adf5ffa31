"""Checkpoints from a hot loop go through a writer thread: the loop never waits for the
disk, and the newest checkpoint is what ends up in the file."""
import json
import os
import threading

import pytest

from dlcp_emu.jsonio import CheckpointWriter


# A caller that waited for the blocked file would wait forever: it fails instead.
@pytest.mark.timeout(20)
def test_a_blocked_write_never_blocks_the_caller_and_the_newest_wins(tmp_path):
    path = tmp_path / "stats.json"
    # A FIFO where the writer puts its temporary file, and a checkpoint larger than a pipe
    # holds: writing it blocks until someone reads, as a write to a stalled disk would.
    tmp = f"{path}.tmp{os.getpid()}"
    os.mkfifo(tmp)
    pad = "x" * (1 << 20)
    w = CheckpointWriter()
    w.write(path, {"n": 0, "pad": pad})
    with open(tmp) as f:             # returns once the writer thread has it open: it is busy
        for n in range(1, 100):      # with the first checkpoint; would hang if write() waited
            w.write(path, {"n": n, "pad": pad})
        assert json.loads(f.read())["n"] == 0
    w.close()                        # writes what is pending: only the newest
    assert json.loads(path.read_text())["n"] == 99
    assert not os.path.exists(tmp)


def test_close_with_nothing_pending_returns(tmp_path):
    w = CheckpointWriter()
    w.close()
    w2 = CheckpointWriter()
    w2.write(tmp_path / "a.json", [1, 2])
    w2.close()
    assert json.loads((tmp_path / "a.json").read_text()) == [1, 2]


def test_writer_thread_starts_with_the_first_write_and_takes_the_loops_scheduling(tmp_path):
    """Made before a switch turns real-time, written to from its real-time loop: the writer
    thread must be as real-time as the loop, or it can hold the GIL while preempted (priority
    inversion). SCHED_BATCH stands in for the loop's policy (no privilege needed)."""
    w = CheckpointWriter()                       # made here, by an ordinary thread
    seen = {}

    def loop():
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
        w.write(tmp_path / "s.json", {"n": 1})
        seen["policy"] = os.sched_getscheduler(w._thread.native_id)

    t = threading.Thread(target=loop)
    t.start()
    t.join(10)
    w.close()
    assert seen["policy"] == os.SCHED_BATCH
    assert json.loads((tmp_path / "s.json").read_text()) == {"n": 1}
