"""Writing JSON so that a reader (or a crash) never sees half a file."""
import json
import os
import threading


def write_json_atomic(path, data, *, indent=None, default=None, fsync=False):
    """Write to a temporary file beside `path`, then rename over it. fsync=True for state
    that must survive a machine crash (a run's record of what it created)."""
    # One dumps and one write: json.dump's many small writes were 8x slower.
    _write_text_atomic(os.fspath(path), json.dumps(data, indent=indent, default=default), fsync)


def _write_text_atomic(path, text, fsync=False):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
        if fsync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


class CheckpointWriter:
    """Periodic checkpoints of a process on a hot loop (switch, host agent), written by a
    thread: the loop only serialises (its data changes once it goes on), and never waits for
    the disk. A write or rename there blocked 60-300 ms at times (all hosts at once: a busy
    journal), which stalled the emulation it should only have recorded. Only the newest
    pending checkpoint of each file is written; close() writes them and stops the thread,
    before the process's final, synchronous write.

    The thread starts with the first write, from the loop, so that it inherits the loop's
    scheduling: a real-time switch's writer started as an ordinary thread could hold the GIL
    when the real-time tasks preempted it, and the switch then waited for it (a priority
    inversion)."""

    def __init__(self):
        self._cv = threading.Condition()
        self._pending = {}        # path -> the newest text for it not yet written
        self._closed = False
        self._thread = None

    def write(self, path, data, **dumps_kw):
        item = (os.fspath(path), json.dumps(data, **dumps_kw))
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="checkpoints", daemon=True)
            self._thread.start()
        with self._cv:
            self._pending[item[0]] = item[1]
            self._cv.notify()

    def _run(self):
        while True:
            with self._cv:
                while not self._pending and not self._closed:
                    self._cv.wait()
                if not self._pending:
                    return
                path = next(iter(self._pending))
                text = self._pending.pop(path)
            _write_text_atomic(path, text)

    def close(self):
        with self._cv:
            self._closed = True
            self._cv.notify()
        if self._thread is not None:
            self._thread.join()
