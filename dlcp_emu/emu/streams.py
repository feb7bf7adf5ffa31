"""Append-only record files: what a run's processes measure goes to disk as it is measured,
so that their memory stays flat however long the run lasts, and a crash keeps everything
written up to it (before, every record was kept in memory and the whole set rewritten each
second: a 12-minute soak's agents grew 1.4 MB a minute, its switches up to a cap).

- `Appender`: a thread that appends byte chunks to one file. A hot loop (a real-time
  switch, an agent) only hands a chunk over and never waits for the disk, as with
  `jsonio.CheckpointWriter`; the thread starts with the first chunk, from the loop, so it
  inherits the loop's scheduling.
- JSON lines: one record a line, `[kind, data]` (`JsonLinesWriter`). `JsonLinesReader` reads
  on from where it stopped (it keeps the offset), so a runner polling a growing file reads
  each byte once. A last line without its newline is one being written: it is left for the
  next read; at the final read it is a line torn by a crash, ignored and counted (`torn`).
- int64 rows (`RowWriter`, `read_rows`): a JSON header line naming the columns, then
  fixed-width little-endian int64 rows (queue occupancy samples: 8 bytes a value).
"""
import json
import os
import threading
from array import array
from collections import deque
from itertools import chain


class Appender:
    def __init__(self, path, fresh=False):
        """fresh: start the file empty (a new run's records never follow an old run's)."""
        self.path = os.fspath(path)
        self._chunks = deque()
        self._cv = threading.Condition()
        self._closed = False
        self._thread = None
        self.written = 0          # bytes appended so far
        self._file = open(self.path, "wb" if fresh else "ab", buffering=0)

    def append(self, data):
        if not data:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="appender", daemon=True)
            self._thread.start()
        with self._cv:
            self._chunks.append(data)
            self._cv.notify()

    def _run(self):
        while True:
            with self._cv:
                while not self._chunks and not self._closed:
                    self._cv.wait()
                if not self._chunks:
                    return
                data = self._chunks.popleft()
            self._write(data)

    def _write(self, data):
        view = memoryview(data)
        while view:
            n = self._file.write(view)
            view = view[n:]
            self.written += n

    def close(self):
        """Append what is pending, stop the thread, close the file."""
        with self._cv:
            self._closed = True
            self._cv.notify()
        if self._thread is not None:
            self._thread.join()
        while self._chunks:                  # never started, or appended after it ended
            self._write(self._chunks.popleft())
        self._file.close()


class JsonLinesWriter:
    def __init__(self, path):
        self._out = Appender(path, fresh=True)

    def append(self, records):
        """records: [(kind, data)], data anything JSON takes; one chunk for all of them."""
        if records:
            self._out.append("".join(json.dumps([k, d]) + "\n" for k, d in records).encode())

    def close(self):
        self._out.close()


def tail_text(path, n=2000):
    """The last n bytes of a process's output file as text ("" if there is none)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - n))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def process_cpu_s():
    """CPU seconds this process has used, user and system, every thread: what each process
    of a run reports, so the run can say where the machine's cores went."""
    return round(sum(os.times()[:2]), 3)


def process_cpus():
    """The CPUs this process may run on (emu/placement.py chose them)."""
    return sorted(os.sched_getaffinity(0))


def process_row():
    """The last record of a background process's stream."""
    return ("process", {"cpu_s": process_cpu_s(), "cpus": process_cpus()})


def read_process_row(path):
    """The `process` record a stream ended with, or None (a crash before it)."""
    rows = JsonLinesReader(path).read(prefix=b'["process"', final=True)
    return rows[-1][1] if rows else None


class JsonLinesReader:
    def __init__(self, path):
        self.path = os.fspath(path)
        self.offset = 0     # bytes consumed: every line before it was read
        self.torn = 0       # bytes of a last line without its newline, at the final read
        self.bad = 0        # complete lines that are not a [kind, data] pair (corruption)

    def read(self, prefix=None, final=False):
        """[(kind, data)] of the lines completed since the last read. prefix (bytes): take
        only lines that start with it (the others are skipped unparsed). final: the writer
        has ended, so a last line without its newline is torn (counted, ignored)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        if final:
            self.torn = len(data) - end
        self.offset += end
        out = []
        for line in data[:end].splitlines():
            if prefix is not None and not line.startswith(prefix):
                continue
            try:
                kind, value = json.loads(line)
            except ValueError:
                self.bad += 1
                continue
            out.append((kind, value))
        return out


class RowWriter:
    """Rows of int64 values; buffered rows go to the file at each `flush`."""

    def __init__(self, path, columns):
        self.columns = list(columns)
        with open(path, "wb") as f:          # the header, synchronously: it is tiny
            f.write(json.dumps({"format": "int64 rows", "columns": self.columns}).encode() + b"\n")
        self._out = Appender(path)
        self.rows = 0

    def flush(self, rows):
        """Append rows (sequences of len(columns) ints) in one chunk."""
        if rows:
            self._out.append(array("q", chain.from_iterable(rows)).tobytes())
            self.rows += len(rows)

    def close(self):
        self._out.close()


def read_rows(path):
    """(columns, int64 array of shape (rows, columns), torn bytes): torn bytes are those of a
    last row a crash cut short, left out."""
    import numpy as np
    with open(path, "rb") as f:
        header = json.loads(f.readline())
        start = f.tell()
    columns = header["columns"]
    width = 8 * len(columns)
    size = os.path.getsize(path) - start
    rows = size // width
    data = np.fromfile(path, dtype="<i8", count=rows * len(columns), offset=start)
    return columns, data.reshape(rows, len(columns)), size - rows * width
