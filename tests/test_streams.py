"""Records streamed to disk as they are measured (`emu/streams.py`): what is written is read
back, a reader polling a growing file reads each record once, a last line or row torn by a
crash is left out and counted, and the readers built on them (`emu/run_records.py`) say so."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np

from dlcp_emu.emu.run_records import host_paths, queue_samples, read_host_records
from dlcp_emu.emu.streams import JsonLinesReader, JsonLinesWriter, RowWriter, read_rows

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_records_written_are_read_back_in_order(tmp_path):
    path = tmp_path / "r.jsonl"
    w = JsonLinesWriter(path)
    written = [("iteration", {"iteration": i, "comm_end_ns": 10 * i}) for i in range(3)]
    written += [("delivery", [0, 1, 2, 4096, 0, 5, 9, {"3": 1424}]), ("lost", [1, 2, 0, 1424])]
    w.append(written[:2])
    w.append(written[2:])
    w.close()
    r = JsonLinesReader(path)
    assert r.read(final=True) == [(k, d) for k, d in written]
    assert (r.torn, r.bad) == (0, 0)


def test_a_reader_reads_on_from_where_it_stopped(tmp_path):
    """The runner polls a growing file: each record comes once, and a line still being
    written (no newline yet) waits for the next read."""
    path = tmp_path / "r.jsonl"
    r = JsonLinesReader(path)
    assert r.read() == []                          # not created yet
    w = JsonLinesWriter(path)
    w.append([("tensor", {"n": 1})])
    w.close()
    assert r.read() == [("tensor", {"n": 1})]
    offset = r.offset
    with open(path, "ab") as f:
        f.write(b'["tensor", {"n": 2}]\n["tensor", {"n"')   # the writer is mid-line
    assert r.read() == [("tensor", {"n": 2})]
    assert r.torn == 0 and r.offset > offset
    with open(path, "ab") as f:
        f.write(b': 3}]\n["iteration", {"comm_end_ns": 7}]\n')
    assert r.read(prefix=b'["iteration"') == [("iteration", {"comm_end_ns": 7})]
    assert r.read() == []                          # the tensor line was passed over, not kept


def test_a_line_torn_by_a_crash_is_left_out_and_counted(tmp_path):
    """A process killed while appending: the records before its last line are all there;
    the torn line is ignored and said (torn bytes), never a parse error."""
    path = tmp_path / "host-0.records.jsonl"
    script = textwrap.dedent(f"""
        import os, signal
        from dlcp_emu.emu.streams import JsonLinesWriter
        w = JsonLinesWriter({str(path)!r})
        w.append([("tensor", {{"iteration": i, "bucket": 0}}) for i in range(100)])
        w.close()
        with open({str(path)!r}, "ab") as f:    # a chunk the kill cut short
            f.write(b'["tensor", {{"iteration": 100, "buc')
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    p = subprocess.run([sys.executable, "-c", script], cwd=REPO)
    assert p.returncode == -signal.SIGKILL
    r = JsonLinesReader(path)
    got = r.read(final=True)
    assert [d["iteration"] for _, d in got] == list(range(100))
    assert r.torn == len(b'["tensor", {"iteration": 100, "buc')
    # The runner's reader keeps the host's records and reports the torn line.
    records, problems = read_host_records({0: host_paths(tmp_path, 0)})
    assert [t["iteration"] for t in records[0]["tensors"]] == list(range(100))
    assert problems == {0: {"torn_bytes": r.torn, "bad_lines": 0}}


def test_a_complete_line_that_is_not_a_record_is_counted_not_fatal(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'["tensor", {"n": 1}]\n{garbage\n["tensor", {"n": 2}]\n')
    r = JsonLinesReader(path)
    assert r.read(final=True) == [("tensor", {"n": 1}), ("tensor", {"n": 2})]
    assert (r.torn, r.bad) == (0, 1)


def test_a_new_writer_starts_a_fresh_file(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('["tensor", {"old": true}]\n')
    w = JsonLinesWriter(path)
    w.append([("tensor", {"new": True})])
    w.close()
    assert JsonLinesReader(path).read(final=True) == [("tensor", {"new": True})]


def test_rows_are_read_back_and_a_torn_last_row_is_counted(tmp_path):
    path = tmp_path / "s1.queues.i64"
    w = RowWriter(path, ["t_ns", "1", "2"])
    w.flush([(1, 0, 1500), (2, 3000, 2**40)])
    w.flush([])
    w.flush([(3, -1, 7)])
    w.close()
    columns, rows, torn = read_rows(path)
    assert columns == ["t_ns", "1", "2"] and torn == 0
    assert rows.tolist() == [[1, 0, 1500], [2, 3000, 2**40], [3, -1, 7]]
    with open(path, "ab") as f:
        f.write(b"\x01" * 11)                      # a row cut short
    columns, rows, torn = read_rows(path)
    assert len(rows) == 3 and torn == 11


def test_a_long_runs_queue_samples_keep_each_runs_peak(tmp_path):
    """Beyond the table's rows per switch, each row is the largest of `every` consecutive
    samples (peaks survive), and the summary's note says so; below it nothing changes."""
    path = tmp_path / "s1.queues.i64"
    w = RowWriter(path, ["t_ns", "1", "2"])
    n = 1005
    w.flush([(t, t % 7, 100 if t == 503 else 0) for t in range(n)])
    w.close()
    stats = {"s1": {"queue_samples": {"path": str(path), "ports": [1, 2], "rows": n}}}
    full, note = queue_samples(stats, max_rows=n)
    assert note == {} and full["s1"]["samples"].tolist() == [[t, t % 7, 100 if t == 503 else 0] for t in range(n)]
    cut, note = queue_samples(stats, max_rows=101)
    rows = cut["s1"]["samples"]
    assert cut["s1"]["ports"] == [1, 2]
    assert note["s1"] == {"samples": n, "rows": 101, "every": 10, "aggregate": "max",
                          "torn_bytes": 0, "raw": str(path)}
    assert rows[:, 0].tolist() == list(range(0, n, 10))
    assert rows[:100, 1].tolist() == [6] * 100 and rows[100, 1] == max(t % 7 for t in range(1000, n))
    assert rows[50, 2] == 100 and np.count_nonzero(rows[:, 2]) == 1


def test_host_records_come_back_in_the_tables_format(tmp_path):
    """Status, samples and the stream of one host make the record dict the tables read."""
    paths = host_paths(tmp_path, 2)
    paths["status"].write_text(json.dumps({"rank": 2, "role": "worker", "done": True,
                                           "started_ns": 5, "timer_lateness_sum_ns": 9}))
    paths["samples"].write_text(json.dumps({"timer_lateness_ns": [1, 2], "rx_lag_ns": [3]}))
    w = JsonLinesWriter(paths["records"])
    w.append([("tensor", {"iteration": 1, "bucket": 0}), ("iteration", {"iteration": 0}),
              ("tensor", {"iteration": 0, "bucket": 1}), ("tensor", {"iteration": 0, "bucket": 0}),
              ("delivery", [1, 0, 0, 8, 0, 1, 2, {}]), ("send", {"tensor_id": 0})])
    w.close()
    (rec,), problems = read_host_records({2: paths, 3: host_paths(tmp_path, 3)})  # 3 never ran
    assert problems == {}
    assert rec["rank"] == 2 and rec["done"] and rec["timer_lateness_ns"] == [1, 2]
    assert [(t["iteration"], t["bucket"]) for t in rec["tensors"]] == [(0, 0), (0, 1), (1, 0)]
    assert rec["iterations"] == [{"iteration": 0}] and rec["deliveries"] == [[1, 0, 0, 8, 0, 1, 2, {}]]
    assert rec["sends"] == [{"tensor_id": 0}] and "lost" not in rec and "accuracy" not in rec
