"""A host's records taken out as they close (`host.records.take_closed`), as the emulator's
host process streams them: run the same simulated experiment twice, once keeping every
record (the simulator's way) and once taking the closed ones out every few hundred events
through the JSON-lines stream and reading them back (`run_records.read_host_records`).
The tables are identical, nothing is lost, and the agents hold only open records."""
import pandas as pd
import pytest

from dlcp_emu.emu.run_records import host_paths, read_host_records
from dlcp_emu.emu.streams import JsonLinesWriter
from dlcp_emu.experiment.tables import tables
from dlcp_emu.experiment.spec import load_spec
from dlcp_emu.host.agent import Worker
from dlcp_emu.host.records import take_closed
from dlcp_emu.sim.run import _records, build

CASES = [("examples/default.toml", "dlcp", {"byte_scale": 0.002}),      # ring all-reduce
         ("examples/ps-vgg16.toml", "dlcp", {"byte_scale": 0.0005})]   # a PS's lost ranges


def simulate(spec, preset, each_slice=None, agents="auto"):
    _, _, net, hosts = build(spec, preset, agents=agents)
    hosts.start()
    while not hosts.done() and net.loop.pending():
        net.loop.run(until=int(spec.time_limit_s * 1e9), max_events=300)
        if each_slice:
            each_slice(hosts)
    assert hosts.done()
    return hosts


@pytest.mark.parametrize("path,preset,fields", CASES, ids=["ring", "ps"])
def test_streamed_records_make_the_same_tables_and_agents_keep_only_open_ones(path, preset, fields, tmp_path):
    spec = load_spec(path)
    for name, value in fields.items():
        spec = spec.with_field(name, value)
    spec = spec.with_field("workload.iterations", 4)
    kept = simulate(spec, preset)
    expected = [_records(rank, s) for rank, s in kept.stacks.items()]

    paths = {rank: host_paths(tmp_path, rank) for rank in kept.stacks}
    writers = {rank: JsonLinesWriter(p["records"]) for rank, p in paths.items()}
    held = {"iterations": 0, "tensors": 0, "deliveries": 0}

    def stream(hosts):
        for rank, st in hosts.stacks.items():
            writers[rank].append(take_closed(st.agent, st))
            if isinstance(st.agent, Worker):
                held["iterations"] = max(held["iterations"], len(st.agent.iteration_records))
                held["tensors"] = max(held["tensors"], len(st.agent.tensors))
            held["deliveries"] = max(held["deliveries"], len(st.deliveries) + len(st.completions))

    streamed = simulate(spec, preset, stream)
    for rank, st in streamed.stacks.items():
        writers[rank].append(take_closed(st.agent, st, final=True))
        writers[rank].close()
        role = "worker" if isinstance(st.agent, Worker) else "ps"
        paths[rank]["status"].write_text(f'{{"rank": {rank}, "role": "{role}", "started_ns": 0}}')
    records, problems = read_host_records(paths)
    assert problems == {}
    for a, b in zip(tables(expected, spec.scale), tables(records, spec.scale)):
        assert len(a) > 0
        pd.testing.assert_frame_equal(a, b)
    workers = spec.workload["workers"]
    lost = {r["rank"]: r["lost"] for r in records if r["rank"] >= workers}
    assert lost == {r: [list(x) for x in s.agent.lost] for r, s in kept.stacks.items() if r >= workers}
    if "ps" in path:
        assert any(lost.values()), "no lost range to stream"
    # Open records only: the one iteration computing and the one still synchronising, their
    # buckets; every delivery and send leaves at once.
    n_buckets = max(len(r.get("tensors", [])) for r in expected) // 4
    assert held["iterations"] <= 2 and held["tensors"] <= 2 * n_buckets, held
    assert held["deliveries"] == 0


def test_a_schedules_streamed_records_make_the_same_messages_and_exposed_communication(tmp_path):
    """A schedule's ranks (`ScheduleAgent`) stream their iterations with the compute each
    held, and every message sent and received: read back, the messages, traffic classes and
    exposed communication are the simulator's own."""
    from dlcp_emu.experiment.results import measured_iterations
    from dlcp_emu.experiment.schedule_results import class_table, exposed_table, message_table
    spec = load_spec("examples/llm-emu.toml").with_field("workload.iterations", 3)
    # the emulator's hosts run the Python agent (the simulator's native engine runs its twin in the core)
    kept = simulate(spec, "dlcp", agents="python")
    expected = [_records(rank, s) for rank, s in kept.stacks.items()]
    paths = {rank: host_paths(tmp_path, rank) for rank in kept.stacks}
    writers = {rank: JsonLinesWriter(p["records"]) for rank, p in paths.items()}
    held = []

    def stream(hosts):
        for rank, st in hosts.stacks.items():
            writers[rank].append(take_closed(st.agent, st))
            held.append(len(st.agent.sent) + len(st.agent.received) + len(st.agent.iteration_records))

    streamed = simulate(spec, "dlcp", stream, agents="python")
    for rank, st in streamed.stacks.items():
        writers[rank].append(take_closed(st.agent, st, final=True))
        writers[rank].close()
        paths[rank]["status"].write_text(f'{{"rank": {rank}, "role": "worker", "started_ns": 0}}')
    records, problems = read_host_records(paths)
    assert problems == {}
    want, got = message_table(expected, spec.scale), message_table(records, spec.scale)
    assert len(want) and want["lost_bytes"].sum() > 0
    pd.testing.assert_frame_equal(want, got)
    pd.testing.assert_frame_equal(class_table(want), class_table(got))
    its = [measured_iterations(tables(r, spec.scale)[0]) for r in (expected, records)]
    pd.testing.assert_frame_equal(exposed_table(expected, its[0], spec.scale), exposed_table(records, its[1], spec.scale))
    assert max(held) <= 1    # messages leave at once; at most the open iteration stays
