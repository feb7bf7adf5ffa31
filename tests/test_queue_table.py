"""The queue table: each switch's port columns of samples as long rows (switch, port, t_s,
queued_bytes), times real-world from the run's start; ports that never queued left out."""
import numpy as np
import pandas as pd

from dlcp_emu.experiment.tables import queue_table
from dlcp_emu.scale import Scale


def test_rows_are_each_ports_samples_in_real_world_seconds():
    samples = {
        "l1": {"ports": [1, 2, 3], "samples": [[1000, 0, 5, 0], [3000, 7, 6, 0]]},
        "s1": {"ports": [4], "samples": np.array([[2000, 9]], dtype=np.int64)},
        "s2": {"ports": [1], "samples": []},   # nothing sampled
        "s3": {},
    }
    got = queue_table(samples, t0_ns=1000, scale=Scale(dilation=2.0))
    want = pd.DataFrame({"switch": ["l1", "l1", "l1", "l1", "s1"], "port": [1, 1, 2, 2, 4],
                         "t_s": [0.0, 1e-6, 0.0, 1e-6, 0.5e-6], "queued_bytes": [0, 7, 5, 6, 9]})
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert got["port"].dtype == np.int64 and got["queued_bytes"].dtype == np.int64


def test_no_queue_anywhere_is_an_empty_table_with_the_columns():
    got = queue_table({"l1": {"ports": [1], "samples": [[0, 0]]}}, 0, Scale())
    assert got.empty and list(got.columns) == ["switch", "port", "t_s", "queued_bytes"]
