"""A schedule run's messages and deliveries tables made with numpy from the hosts' records
(the core's columns or the Python agents' rows) are the tables pandas made of the records'
rows before (a left merge of every sent message with its arrival): row for row, dtypes
included, on a whole run and on the records of a run stopped early (arrivals missing)."""
import numpy as np
import pandas as pd
import pytest

from workloads.schedule import TrafficClass

from dlcp_emu.experiment.record_columns import MESSAGE_FIELDS
from dlcp_emu.experiment.schedule_results import MESSAGE_COLUMNS, message_table
from dlcp_emu.experiment.tables import tables

from test_core_schedule import CASES, spec_of
from test_schedule_exposure import records_of


def rows(cols):
    return cols if isinstance(cols, list) else list(zip(*(cols[k].tolist() for k in MESSAGE_FIELDS)))


def message_table_by_rows(records, scale, t0_ns=0):
    sent = [m for rec in records for m in rows(rec.get("messages_sent", []))]
    got = [m for rec in records for m in rows(rec.get("messages_received", []))]
    s = pd.DataFrame([m[:7] for m in sent], columns=list(MESSAGE_FIELDS[:7]))
    r = pd.DataFrame([(m[0], m[1], m[7], m[8]) for m in got], columns=["iteration", "gid", "done_ns", "lost_bytes"])
    d = s.merge(r, on=["iteration", "gid"], how="left")
    d["sent_s"] = (d["sent_ns"] - t0_ns) * scale.s_per_ns
    d["done_s"] = (d["done_ns"] - t0_ns) * scale.s_per_ns
    d["fct_s"] = d["done_s"] - d["sent_s"]
    d["tclass"] = [TrafficClass(int(c)).label for c in d["tclass"]]
    return d[MESSAGE_COLUMNS].sort_values(["iteration", "gid"], ignore_index=True)


def deliveries_by_rows(records, scale, t0_ns):
    rows, by_class = [], []
    for rec in records:
        for src, it_, tid, nbytes, lost, first, done, classes in rec.get("deliveries", []):
            rows.append((src, rec["rank"], it_, tid, nbytes, lost, first, done))
            by_class.append(classes)
    d = pd.DataFrame(rows, columns=["src", "dst", "iteration", "tensor_id", "nbytes", "lost_bytes", "first_s", "done_s"])
    for col in ("first_s", "done_s"):
        d[col] = (d[col] - t0_ns) * scale
    lost = np.zeros((9, len(rows)), dtype=np.int64)
    for i, classes in enumerate(by_class):
        for k, n in classes.items():
            if -1 <= int(k) <= 7:
                lost[int(k) + 1, i] = int(n)
    for k in range(-1, 8):
        d[f"lost_mag{k}"] = lost[k + 1]
    return d


def cut(records, fraction):
    """The records as a run stopped at that fraction of its last arrival would leave them."""
    t = int(fraction * max(r["messages_received"]["done_ns"].max() for r in records))
    out = []
    for r in records:
        got = r["messages_received"]
        keep = got["done_ns"] <= t
        out.append({**r, "messages_received": {k: v[keep] for k, v in got.items()}})
    return out


@pytest.mark.parametrize("agents", ["core", "python"])
def test_the_messages_table_is_the_left_merge_of_the_rows(agents, tmp_path):
    workload, preset, payload = CASES["1f1b-dlcp-sizes"]
    _, records, scale = records_of(spec_of(workload, payload), preset, tmp_path, agents)
    t0 = 12345
    want = message_table_by_rows(records, scale, t0)
    assert len(want) and want["done_s"].notna().all()
    pd.testing.assert_frame_equal(message_table(records, scale, t0), want)
    if agents == "core":
        part = cut(records, 0.5)
        want = message_table_by_rows(part, scale, t0)
        assert want["done_s"].isna().any() and want["done_s"].notna().any()
        pd.testing.assert_frame_equal(message_table(part, scale, t0), want)


def test_the_deliveries_table_is_the_rows_table(tmp_path):
    """dlcp with bounded loss: some deliveries lost bytes by magnitude class."""
    workload, preset, payload = CASES["1f1b-dlcp-sizes"]
    _, records, scale = records_of(spec_of(workload, payload), preset, tmp_path)
    as_rows = []
    for r in records:
        d = r["deliveries"]
        lost = {i: dict(pairs) for i, pairs in d["lost_by_class"]}
        cols = [d[k].tolist() for k in ("src", "iteration", "tensor_id", "nbytes", "lost_bytes", "first_ns", "done_ns")]
        as_rows.append({**r, "deliveries": [(*row, lost.get(i, {})) for i, row in enumerate(zip(*cols))]})
    want = deliveries_by_rows(as_rows, scale.s_per_ns, 77)
    assert (want[[f"lost_mag{k}" for k in range(8)]].to_numpy() > 0).any()
    pd.testing.assert_frame_equal(tables(records, scale, 77)[2], want)
    pd.testing.assert_frame_equal(tables(as_rows, scale, 77)[2], want)


def test_the_core_hands_its_message_rows_over_once(tmp_path):
    """The records of a schedule agent in the core are taken at the run's end: the core keeps
    no copy of its message and delivery rows (at 1024 GPUs, 10M rows held twice)."""
    from dlcp_emu.experiment import run as experiment_run
    from dlcp_emu.sim.core_schedule import CoreScheduleAgent
    from dlcp_emu.sim.run import SimBackend
    workload, preset, payload = CASES["1f1b-dlcp-sizes"]
    backend = SimBackend(agents="core")
    setup = experiment_run.prepare(spec_of(workload, payload), backend, preset, tmp_path)
    setup.run_dir.mkdir(parents=True, exist_ok=True)
    out = backend.execute(setup, lambda *_: None)
    assert all(len(rec["messages_sent"]["gid"]) and len(rec["deliveries"]["src"]) for rec in out.records)
    agents = [ep.agent for ep in out.handles["hosts"].endpoints.values() if isinstance(ep.agent, CoreScheduleAgent)]
    assert len(agents) == len(out.records)
    rank_of = {rec["rank"]: rec for rec in out.records}
    for agent in agents:
        again = agent.records()
        assert again["iterations"] == rank_of[agent.rank]["iterations"]   # the small records stay
        assert not len(again["messages_sent"]["gid"]) and not len(again["messages_received"]["gid"])
        assert not len(again["deliveries"]["src"])
