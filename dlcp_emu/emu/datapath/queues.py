"""Queue occupancy over time, for the report's bottleneck plot: the loop appends (t_ns,
queued bytes of each port) to `rows` at most every queue_sample_ns; each stats interval they
are appended to the config's queue_path (`streams.RowWriter`, 8 bytes a value) and
forgotten, so the switch's memory stays flat however long the run. (They were kept in memory
up to a cap of 200,000 samples: a 12-minute soak's switches grew 12% until they reached it,
and what came after the cap was not recorded.)"""
from dlcp_emu.emu.streams import RowWriter


class QueueSamples:
    def __init__(self, path, port_numbers):
        self.path = path
        self.ports = list(port_numbers)
        self.rows = []
        self.taken = 0           # rows taken for the file (written, or being written)
        self._writer = RowWriter(path, ["t_ns", *map(str, self.ports)])

    def take(self):
        """The rows so far, forgotten here (in place: the loop holds the list)."""
        rows = self.rows[:]
        self.rows.clear()
        self.taken += len(rows)
        return rows

    def write(self, rows, final=False):
        self._writer.flush(rows)
        if final:
            self._writer.close()

    def stats(self):
        return {"path": self.path, "ports": self.ports, "rows": self.taken}
