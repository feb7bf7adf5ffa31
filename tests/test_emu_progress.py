"""The emulated run's progress line counts each job's iterations against its own count
(emu/run.py `iterations_done`), from the run's own setup of a spec of [[jobs]]."""
from dlcp_emu.emu.run import iterations_done, process_keys
from dlcp_emu.experiment.run import prepare
from dlcp_emu.sim.run import SimBackend
from dlcp_emu.experiment.spec import parse_spec
from tests.test_jobs_run import TOP, two_jobs


def test_each_job_counts_its_slowest_worker_against_its_own_iterations():
    setup = prepare(two_jobs(), SimBackend(), "fifo")
    keys = process_keys(setup)
    assert sorted(keys) == ["llm-0", "llm-1", "llm-2", "llm-3", "resnet-0", "resnet-1"]
    counts = {"resnet-0": 3, "resnet-1": 2, "llm-0": 1, "llm-1": 2, "llm-2": 2, "llm-3": 2}
    assert iterations_done(keys, counts) == "resnet 2/3, llm 1/2"
    assert iterations_done(keys, {}) == "resnet 0/3, llm 0/2"


def test_one_job_reads_as_before_and_leaves_out_its_parameter_servers():
    ps = {"model": "resnet50", "pattern": "ps", "workers": 2, "ps": 1, "iterations": 5}
    setup = prepare(parse_spec({**TOP, "workload": ps}), SimBackend(), "fifo")
    keys = process_keys(setup)
    ps_rank, = setup.placement.ps_ranks
    counts = {rank: 4 for rank in keys} | {ps_rank: 0}
    assert iterations_done(keys, counts) == "4/5"
