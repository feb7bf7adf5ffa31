"""Bounded loss zero-filling, the same on every engine, in the fast tier: the default example's
dlcp run (ring, background flows, two iterations) at the byte scale of the fast engine cases,
with a loss bound of 20% so that bounded loss gives up chunks of these small messages (at the
default 1% the bound is under a chunk and nothing is zero-filled). The Python engine (the
oracle), the native one with Python hosts and the native one with the endpoints in the core
give the same summary and tables. test_sim_engines.py runs the example at byte scale 0.01 and
1% in `make test` (its two tests took 10 s of CPU here, this one 3 to 4)."""
import pandas as pd

from test_sim_engines import SMALL, TABLES, WALL, simulate, spec_of

ZERO_FILLING = {**SMALL, "transport.loss_bound": 0.2}


def test_every_engine_zero_fills_the_same_bytes_of_the_default_example(tmp_path):
    spec = spec_of("examples/default.toml", ZERO_FILLING)
    py, py_frames = simulate(spec, "dlcp", "python", tmp_path)
    # Not a quiet run: switches dropped droppable chunks and receivers zero-filled them.
    assert py_frames["deliveries"]["lost_bytes"].sum() > 0 and py_frames["packets"]["drop_reason"].notna().any()
    assert 0 < py["loss_fraction"] <= spec.transport["loss_bound"]
    assert set(py_frames["iterations"]["iteration"]) == {0, 1}
    for hosts in ("python", "core"):
        nat, nat_frames = simulate(spec, "dlcp", "native", tmp_path, hosts=hosts)
        assert nat["engine"] == "native"
        assert ("hosts' endpoints in the core" if hosts == "core" else "hosts' endpoints in Python (asked for)") \
            in nat["engine_note"], nat["engine_note"]
        assert {k: v for k, v in nat.items() if k not in WALL} == {k: v for k, v in py.items() if k not in WALL}
        assert set(nat_frames) == set(py_frames)
        for name in (n for n in TABLES if n in py_frames):
            pd.testing.assert_frame_equal(nat_frames[name].reset_index(drop=True),
                                          py_frames[name].reset_index(drop=True), obj=f"{hosts}: {name}")
