"""A schedule plan's programs as the two agents take them: the Python agent's RankProgram
(`plan.programs[r]`) and the core's flat arrays (`plan.programs.arrays(r)`), cut from the same
message columns, must be one program; and the tensor ids that tell a rank's messages apart."""
import numpy as np
import pytest

from dlcp_emu.experiment.run import prepare
from dlcp_emu.experiment.schedule_setup import servers_of
from dlcp_emu.experiment.spec import load_spec
from dlcp_emu.host.schedule_arrays import RankArrays, rank_arrays
from dlcp_emu.host.schedule_plan import MAX_LAYER_MESSAGES, _tensor_ids
from dlcp_emu.sim.run import SimBackend
from dlcp_emu.wire.layout import TENSOR_LAYER_SHIFT

from schedule_plan_oracle import plan_by_records
from test_core_schedule import CASES, spec_of


@pytest.mark.parametrize("case", sorted(CASES))
def test_core_arrays_are_the_python_program_flattened(case):
    workload, preset, payload = CASES[case]
    plan = prepare(spec_of(workload, payload), SimBackend(), preset).plan
    assert len(plan.programs) == plan.n_ranks
    for r in range(plan.n_ranks):
        program, arrays = plan.programs[r], plan.programs.arrays(r)
        assert plan.programs[r] == program          # made again when asked for: the same
        flat = rank_arrays(program)
        for name in RankArrays.__dataclass_fields__:
            a, b = getattr(flat, name), getattr(arrays, name)
            if isinstance(a, np.ndarray):
                assert a.dtype == b.dtype and np.array_equal(a, b), (case, r, name)
            else:
                assert a == b, (case, r, name)
        # every message a rank receives is known by its (src, tensor_id), and is sent to it
        assert sorted(program.recv_gid.values()) == sorted(g for gs in program.recvs for g in gs)
        assert all(plan.gid_dst[g] == r and plan.gid_src[g] == src for (src, _), g in program.recv_gid.items())
    assert plan.critical_steps == max(sum(map(len, p.recvs)) for p in plan.programs)
    assert plan.compute_ns == max(p.compute_ns for p in plan.programs)


@pytest.mark.parametrize("case", sorted(CASES) + ["examples/llm-tp-dp.toml"])
def test_the_columns_are_the_plan_built_a_record_a_message(case):
    """The plan's message columns and every rank's program against the plan as it was built
    before the columns, a Python record a message (tests/schedule_plan_oracle.py)."""
    if case in CASES:
        workload, preset, payload = CASES[case]
        spec = spec_of(workload, payload)
    else:
        spec, preset = load_spec(case), "dlcp"
    setup = prepare(spec, SimBackend(), preset)
    plan, w = setup.plan, spec.workload
    servers = servers_of(setup.placement, setup.topology, w["gpus_per_server"])
    want = plan_by_records(setup.trace, spec.scale, w["algorithms"], list(servers).__getitem__)
    assert plan.n_messages == len(want["src"]) > 0
    assert plan.gid_src.tolist() == want["src"] and plan.gid_dst.tolist() == want["dst"]
    assert plan.gid_nbytes.tolist() == want["nbytes"] and plan.gid_tclass.tolist() == want["tclass"]
    assert list(plan.gid_dim) == want["dim"]
    for r in range(plan.n_ranks):    # sends (gid, dst, size, the step each waits for, tensor id), receives, ops
        assert plan.programs[r] == want["programs"][r], (case, r)


def test_tensor_ids_count_messages_per_pair_and_layer():
    src = np.array([0, 0, 1, 0, 0, 0])
    dst = np.array([1, 1, 0, 1, 2, 1])
    layer = np.array([0, 0, 0, 1, 0, -1])
    tid = _tensor_ids(src, dst, layer)
    code, n = tid >> TENSOR_LAYER_SHIFT, tid & ((1 << TENSOR_LAYER_SHIFT) - 1)
    assert code.tolist() == [1, 1, 1, 2, 1, 0]       # layer + 1; no layer (-1): 0
    assert n.tolist() == [0, 1, 0, 0, 0, 0]          # counted in gid order within (src, dst, code)


def test_too_many_messages_of_one_layer_between_two_ranks_is_an_error():
    n = MAX_LAYER_MESSAGES + 1
    src, dst, layer = np.zeros(n, np.int64), np.ones(n, np.int64), np.full(n, 3, np.int64)
    _tensor_ids(src[:-1], dst[:-1], layer[:-1])      # as many as fit: fine
    with pytest.raises(ValueError, match="of layer 3 from rank 0 to rank 1"):
        _tensor_ids(src, dst, layer)
