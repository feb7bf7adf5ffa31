"""`dlcp-emu bench host` moves its message intact on both data planes and reports both figures."""
from dlcp_emu.tools import bench_host


def test_bench_host_moves_the_message_intact_both_ways_and_reports_ratios():
    r = bench_host.run(megabytes=2)
    for t in ("dlcp", "reliable"):
        x = r[t]
        assert x["intact"]
        assert x["packets"] >= 2 * 2_000_000 // 1424 and x["python_packets"] >= 2 * 2_000_000 // 1424 * 0.99
        assert x["pps"] > 0 and x["python_pps"] > 0 and x["ratio"] == round(x["pps"] / x["python_pps"], 1)
