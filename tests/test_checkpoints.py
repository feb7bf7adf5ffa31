"""Checkpoints from a hot loop go through a writer thread: the loop never waits for the
disk, and the newest checkpoint is what ends up in the file."""
import json
import os
import signal

import pytest

from dlcp_emu.jsonio import CheckpointWriter


@pytest.fixture
def no_hang():
    """A caller that waits for the blocked file would wait forever: fail instead."""
    def expire(*_):
        raise TimeoutError("a checkpoint write blocked its caller")
    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def test_a_blocked_write_never_blocks_the_caller_and_the_newest_wins(tmp_path, no_hang):
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
