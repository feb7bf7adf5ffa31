"""The soak's figures from its samples (no emulation): memory growth per kind of process
after the warm-up, switch lateness per interval from cumulative counters, frames summed
over the switches, and the table printed from them."""
from dlcp_emu.tools.bench_soak import frames_accounted, growth, lateness_by_interval, report


def sample(t, rss, count, mean_ns, above):
    return {"t_s": t, "rss_kb": rss,
            "switches": {"s1": {"count": count, "mean_ns": mean_ns, "above": above,
                                "max_ns": None, "fell_behind": False}}}


def test_growth_per_kind_counts_from_the_warm_up_and_ignores_start_and_teardown():
    rss = lambda a, b: {"runner": 100, "datapath s1": a, "datapath s2": a, "hostd h1": b}
    samples = [sample(0, {"runner": 50}, 0, None, 0),                 # starting: not all up
               sample(10, rss(1000, 2000), 0, None, 0),               # still warming up
               sample(20, rss(1024, 2000), 0, None, 0),
               sample(30, rss(1075, 2100), 0, None, 0),
               sample(40, {"runner": 100}, 0, None, 0)]               # teardown
    g = growth(samples, warmup_s=15)
    assert (g["from_s"], g["to_s"]) == (20, 30)
    assert g["by_kind"]["datapath"] == {"start_mb": 2.0, "end_mb": 2.1, "growth": round(2150 / 2048 - 1, 4)}
    assert g["by_kind"]["hostd"]["growth"] == 0.05 and g["by_kind"]["runner"]["growth"] == 0.0


def test_lateness_per_interval_comes_from_the_differences_of_cumulative_counters():
    # After 1000 frames at 5 us: 100 at 10 us, then 300 at 50 us (400 at 40 us), 30 of them late.
    totals = [(1000, 5e6), (1100, 6e6), (1400, 21e6), (1400, 21e6)]
    after = [sample(10 * i, {}, n, total / n, 30 * (i >= 2)) for i, (n, total) in enumerate(totals)]
    rows = lateness_by_interval(after, intervals=3, min_s=10)
    assert [(r["from_s"], r["to_s"], r["frames"]) for r in rows] == [(0, 10, 100), (10, 20, 300), (20, 30, 0)]
    assert (rows[0]["mean_us"], rows[0]["late_share"]) == (10.0, 0.0)
    assert (rows[1]["mean_us"], rows[1]["late_share"]) == (50.0, 0.1)
    assert rows[2]["mean_us"] is None
    wide = lateness_by_interval(after, intervals=1)
    assert [(r["from_s"], r["to_s"], r["frames"], r["mean_us"]) for r in wide] == [(0, 30, 400, 40.0)]


def test_frames_are_summed_over_the_switches_and_printed():
    def st(n_in, sent, drops, queued, ok=True):
        return {"flood_frames": {1: 1}, "flood_copies": {1: 2},
                "conservation": {"frames_in": n_in, "sent": sent, "dropped": drops, "queued": queued,
                                 "on_link": 0, "ok": ok}}
    f = frames_accounted({"l1": st(100, 90, {"dlcp_threshold": 10}, 1),
                          "s1": st(50, 49, {"buffer_full": 1, "dlcp_threshold": 1}, 0, ok=False),
                          "gone": None})
    assert f == {"frames_in": 150, "flood_copies": 2, "sent": 139, "held": 1, "switches": 2,
                 "switches_ok": 1, "dropped": {"dlcp_threshold": 11, "buffer_full": 1}}
    result = {"minutes": 1.0, "preset": "dlcp", "warmup_min": 0.5, "samples": 4, "stopped_because": "x",
              "memory": None, "memory_ok": False, "lateness_after_warmup": None,
              "fidelity": {"fell_behind": False}, "frames": f, "link_frames": 300, "links_ok": True,
              "network_drained": True, "iterations": 8, "links_unbalanced": [],
              "streamed_mb": {"host_records": 1.5}, "run_dir": "r"}
    text = "\n".join(report(result))
    assert "took in 150 frames (+2 flood copies): 139 sent, 12 dropped (buffer_full 1, dlcp_threshold 11), " \
           "1 held at stop; balanced at 1/2 switches" in text
    assert "300 frames sent over links" in text and "host records 1.5 MB" in text
