"""What the runner reads of what its processes streamed (`streams.py`): the agents'
records, status and samples (`hostd`), the switches' queue occupancy samples, the background
flows. While the run goes on it reads only what progress needs, on from where it stopped;
the whole of it once, at the end."""
import json
from pathlib import Path

import numpy as np

from dlcp_emu.emu.streams import JsonLinesReader, read_rows

# Samples of one switch kept as taken in queues.parquet; a longer run's are cut into this
# many equal runs of consecutive samples, each one row: its first time, each port's largest
# occupancy (so the peaks survive). The raw samples stay in emu/<switch>.queues.i64.
QUEUE_TABLE_MAX_ROWS = 200_000
ITERATION_LINE = b'["iteration"'


def host_paths(run_dir, rank):
    """A host process's files (`hostd`'s out_path, records_path, samples_path, and its
    stdout and stderr)."""
    d = Path(run_dir)
    return {"status": d / f"host-{rank}.json", "records": d / f"host-{rank}.records.jsonl",
            "samples": d / f"host-{rank}.samples.json", "log": d / f"host-{rank}.log"}


def _load(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):   # not written yet (or being replaced)
        return None


class Progress:
    """Per host, for the runner's progress line: iterations communicated (counted from the
    records stream, read on from the last offset, iteration lines only), done and packets
    sent (the small status file)."""

    def __init__(self, paths_by_rank):
        self.paths = paths_by_rank
        self.readers = {r: JsonLinesReader(p["records"]) for r, p in paths_by_rank.items()}
        self.iterations = dict.fromkeys(paths_by_rank, 0)
        self.status = dict.fromkeys(paths_by_rank)

    def poll(self):
        for rank, reader in self.readers.items():
            self.iterations[rank] += sum(1 for _, r in reader.read(prefix=ITERATION_LINE)
                                         if r["comm_end_ns"] >= 0)
            st = _load(self.paths[rank]["status"])
            if st is not None:
                self.status[rank] = st
        return self


def read_host_records(paths_by_rank):
    """(records, problems): each host's status, samples and streamed records in one dict,
    the format the tables read (`experiment.tables.tables`), and {rank: what was wrong with
    its stream} (a last line torn by a crash, lines that are not records) if anything was."""
    records, problems = [], {}
    for rank, paths in paths_by_rank.items():
        status = _load(paths["status"])
        reader = JsonLinesReader(paths["records"])
        items = reader.read(final=True)
        if status is None and not items:
            continue                      # never started
        rec = {"rank": rank, **(status or {}), **(_load(paths["samples"]) or {})}
        by_kind = {}
        for kind, data in items:
            by_kind.setdefault(kind, []).append(data)
        rec["iterations"] = by_kind.get("iteration", [])
        # In the order the agent released them, as the tables had them before streaming.
        rec["tensors"] = sorted(by_kind.get("tensor", []), key=lambda t: (t["iteration"], t["bucket"]))
        rec["deliveries"] = by_kind.get("delivery", [])
        rec["sends"] = by_kind.get("send", [])
        if "message_sent" in by_kind or "message_received" in by_kind:   # a schedule's rank
            rec["messages_sent"] = [tuple(m) for m in by_kind.get("message_sent", [])]
            rec["messages_received"] = [tuple(m) for m in by_kind.get("message_received", [])]
            rec["busy_ns"] = [r["busy_ns"] for r in sorted(rec["iterations"], key=lambda r: r["iteration"])]
        if "accuracy" in by_kind:
            rec["accuracy"] = by_kind["accuracy"]
        if rec.get("role") == "ps" or "lost" in by_kind:
            rec["lost"] = by_kind.get("lost", [])
        records.append(rec)
        if reader.torn or reader.bad:
            problems[rank] = {"torn_bytes": reader.torn, "bad_lines": reader.bad}
    return records, problems


def queue_samples(stats, max_rows=QUEUE_TABLE_MAX_ROWS):
    """({switch: {"ports", "samples": int64 rows (t_ns, bytes per port)}} for
    `experiment.tables.queue_table`, note): note says, per switch, how many samples were
    taken, how many rows the table keeps (and the aggregate: each row the largest of
    `every` consecutive samples) and bytes of a torn last row, when any of that happened."""
    out, note = {}, {}
    for name, st in stats.items():
        q = (st or {}).get("queue_samples")
        if not q or not q.get("path") or not Path(q["path"]).exists():
            continue
        columns, rows, torn = read_rows(q["path"])
        n = len(rows)
        every = -(-n // max_rows) if n > max_rows else 1
        if every > 1:
            starts = np.arange(0, n, every)
            rows = np.column_stack([rows[starts, 0], np.maximum.reduceat(rows[:, 1:], starts, axis=0)])
        out[name] = {"ports": [int(c) for c in columns[1:]], "samples": rows}
        if every > 1 or torn:
            note[name] = {"samples": n, "rows": len(rows), "every": every,
                          "aggregate": "max" if every > 1 else None, "torn_bytes": torn,
                          "raw": q["path"]}
    return out, note


def background_log(run_dir, host):
    """A background process's stdout and stderr."""
    return Path(run_dir) / f"background-{host}.log"


def background_path(run_dir, host):
    """Where a host's background process streams its flows (its out_path)."""
    return Path(run_dir) / f"background-{host}.flows.jsonl"


def background_table(paths_by_host, scale):
    """Every background flow the hosts streamed (`flow` lines: each as it finished, then
    those still under way at the end)."""
    import pandas as pd
    rows = []
    for host, path in paths_by_host.items():
        for _, f in JsonLinesReader(path).read(prefix=b'["flow"', final=True):
            rows.append({"src": host, "dst": f["dst"], "bytes": f["bytes"], "state": f["state"],
                         "start_s": scale.seconds(f["start_ns"]),
                         "fct_s": None if f["fct_ns"] is None else scale.seconds(f["fct_ns"])})
    return pd.DataFrame(rows, columns=["src", "dst", "bytes", "state", "start_s", "fct_s"])
