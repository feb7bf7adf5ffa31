"""`dlcp-emu bench transport`: its two loops (the core's and Python's) are one loop, and the
command prints its figures, or a clear error for a bad setting."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dlcp_emu.tools import bench_transport as bench
from dlcp_emu.transport import Message, chunk_magnitudes
from transport_helpers import tensor

CLI = Path(sys.executable).with_name("dlcp-emu")


@pytest.mark.parametrize("transport", ["dlcp", "reliable"])
@pytest.mark.parametrize("loss, rate_bps", [(0.0, None), (0.05, None), (0.02, 1e9)])
def test_the_native_loop_is_the_python_loop(transport, loss, rate_bps):
    """`bench transport`'s loops: the core's (`run_transport_pair`, its channel drawing from
    Python's generator) and the Python one see the same packets, losses and end time."""
    data = tensor(200_000, 3)
    msg = Message(data, src_rank=0, dst_rank=1, chunk_magnitudes=chunk_magnitudes(data, 1424))
    runs = {way: bench.run_way(way, msg, transport, loss, 7, 1500, rate_bps=rate_bps) for way in bench.WAYS}
    keys = ("packets", "events", "end_ns", "lost_packets", "lost_bytes", "retransmissions", "timeouts")
    assert len({tuple(r[k] for k in keys) for r in runs.values()}) == 1, runs
    assert (runs["python"]["lost_packets"] > 0) == (loss > 0)


@pytest.mark.slow   # a command of its own: seconds, in `make test`
def test_the_command_prints_figures_and_refuses_bad_settings():
    out = subprocess.run([str(CLI), "bench", "transport", "--mbytes", "0.2", "--repeat", "1", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["identical"] and [link["loss"] for link in result["links"]] == [0.0, 0.01]
    for link in result["links"]:
        assert set(link["ways"]) == set(bench.WAYS)
        assert all(r["pps"] > 0 and r["packets"] == link["ways"]["python"]["packets"] for r in link["ways"].values())
    for bad, text in ((["--mtu", "60"], "--mtu: mtu 60 leaves no room"), (["--loss", "0"], "--loss"),
                      (["--mbytes", "-1"], "--mbytes"), (["--transport", "tcp"], "--transport")):
        out = subprocess.run([str(CLI), "bench", "transport", *bad], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and text in out.stderr and "Traceback" not in out.stderr, out.stderr
