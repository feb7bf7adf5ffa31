"""Experiments end to end in virtual time: spec -> compare -> tables, summary, table, plots.
(The same runner code paths as emulation, minus Mininet.)"""
import json
from pathlib import Path

import pandas as pd
import pytest

from dlcp_emu.study import compare, report
from dlcp_emu.cli import main
from dlcp_emu.experiment.results import SUMMARY_KEYS
from dlcp_emu.experiment.spec import parse_spec

TINY = {
    "name": "tiny", "seed": 2, "time_dilation": 2.0, "byte_scale": 0.002, "time_limit_s": 30,
    "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                 "host_rate_bps": 10e9, "oversubscription": 2.0},
    "workload": {"model": "resnet50", "pattern": "ring", "workers": 4, "iterations": 3},
    "transport": {"kind": "auto"},
    "background": {"load": 0.1},
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    spec = parse_spec(TINY)
    run_dir, summary = compare.compare(spec, ["fifo", "dlcp"], backend="sim", root=root, log=lambda m: None)
    return root, run_dir, summary


def test_summary_has_every_key_per_preset(run):
    root, run_dir, summary = run
    assert summary["complete"]
    assert (root / "latest").resolve() == run_dir.resolve()
    on_disk = json.loads((run_dir / "summary.json").read_text())
    assert set(on_disk["presets"]) == {"fifo", "dlcp"}
    for preset, s in on_disk["presets"].items():
        for key in SUMMARY_KEYS:
            assert key in s, (preset, key)
        assert s["completed"] and s["switch_conservation_ok"]
        assert 0 < s["scaling_factor"] <= 1.0
        assert s["iteration_time_mean_s"] >= 0.12809   # never faster than ResNet-50's compute
        assert s["tensor_fct_p50_s"] <= s["tensor_fct_p99_s"] <= s["tensor_fct_p999_s"]
        assert s["loss_within_bound"]   # vacuous here (no chunk is droppable at byte scale
                                        # 0.002): test_bounded_loss_sim has real losses
        assert s["background"]["completed"] > 0
        # Every packet entered at least its NIC and one switch; the speed is reported.
        assert s["packet_hops"] >= 2 * s["packets"]["delivered"] and s["packet_hops_per_s"] > 0
    assert on_disk["presets"]["dlcp"]["transport"] == "dlcp"
    assert on_disk["presets"]["fifo"]["transport"] == "reliable"
    # What the transport was, in real-world units (the run is time-dilated).
    settings = on_disk["presets"]["fifo"]["transport_settings"]
    assert settings["congestion"] == "newreno" and settings["initial_window"] == 10
    assert settings["min_rto_us"] == pytest.approx(1000)


def test_tables_are_in_real_world_seconds(run):
    _, run_dir, summary = run
    its = pd.read_parquet(run_dir / "fifo" / "seed-2" / "iterations.parquet")
    # ResNet-50's single-GPU batch is 128.09 ms whatever the dilation.
    assert its["compute_s"].iloc[0] == pytest.approx(0.12809, rel=1e-3)
    assert len(its) == 4 * 3
    tensors = pd.read_parquet(run_dir / "fifo" / "seed-2" / "tensors.parquet")
    assert (tensors["fct_s"] > 0).all()
    for name in ("deliveries", "ports", "queues", "background"):
        assert len(pd.read_parquet(run_dir / "fifo" / "seed-2" / f"{name}.parquet")) > 0
    packets = pd.read_parquet(run_dir / "fifo" / "seed-2" / "packets.parquet")
    assert set(packets["fate"]) <= {"delivered", "trimmed", "lost", "in_flight"}
    delivered = packets[packets["fate"] == "delivered"]
    assert (delivered["recv_s"] > delivered["send_s"]).all()
    # Every training packet a switch dropped shows up as lost, with where and why, and no
    # other packet does. The ports also dropped background packets, which have no rows here.
    lost = packets["fate"] == "lost"
    assert lost.sum() > 0 and (lost == packets["drop_at"].notna()).all()
    assert set(packets.loc[lost, "drop_reason"]) == {"buffer_full"}     # drop-tail
    ports = pd.read_parquet(run_dir / "fifo" / "seed-2" / "ports.parquet")
    ports.index = ports["switch"] + "-eth" + ports["port"].astype(str)
    per_port = packets[lost].groupby("drop_at").size()
    assert (per_port <= ports.loc[per_port.index, "dropped"]).all()
    assert lost.sum() < ports["dropped"].sum()


def test_table_and_plots(run):
    _, run_dir, summary = run
    text = compare.table(summary)
    assert "fifo" in text and "dlcp" in text and "iter mean" in text
    pngs = report.draw(run_dir)
    assert [p.name for p in pngs] == ["fct_cdf.png", "iteration_time.png", "queue_occupancy.png",
                                      "loss_by_magnitude.png"]
    assert all(p.stat().st_size > 15_000 for p in pngs)


def test_cli_rejects_bad_spec_and_preset(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nmtu = 1\n[topology]\nkind = "star"\nhosts = 2\nhost_rate_bps = 1e9\n'
                   '[workload]\nmodel = "resnet50"\nworkers = 2\n')
    assert main(["simulate", str(bad), "--results", str(tmp_path)]) == 2
    assert "mtu: 1 is not allowed; must be an integer in 576..9000" in capsys.readouterr().err
    good = tmp_path / "good.toml"
    good.write_text(bad.read_text().replace("mtu = 1\n", ""))
    assert main(["compare", str(good), "--backend", "sim", "--presets", "fifo,nosuch",
                 "--results", str(tmp_path)]) == 2
    assert "unknown preset(s) 'nosuch'" in capsys.readouterr().err


def _without_wall_clock(x):
    """A summary without what depends on the machine's speed (the engine's figures too)."""
    from dlcp_emu.sim.engines import WALL_CLOCK_KEYS
    if isinstance(x, dict):
        return {k: _without_wall_clock(v) for k, v in x.items() if k not in WALL_CLOCK_KEYS}
    if isinstance(x, list):
        return [_without_wall_clock(v) for v in x]
    return x


@pytest.mark.slow   # spawns a pool: seconds, in `make test`
def test_runs_side_by_side_give_the_figures_of_runs_one_at_a_time(tmp_path, capsys):
    """`compare --jobs 2`: two processes simulate at once; every preset's figures, seed by
    seed, are those of the same runs one at a time, and each run's tables are on disk."""
    spec = parse_spec(TINY)
    _, alone = compare.compare(spec, ["fifo", "dlcp"], seeds=2, backend="sim", root=tmp_path / "one",
                               log=lambda m: None)
    path = tmp_path / "tiny.toml"
    path.write_text(_toml(TINY))
    assert main(["compare", str(path), "--backend", "sim", "--presets", "fifo,dlcp", "--seeds", "2",
                 "--jobs", "2", "--results", str(tmp_path / "two")]) == 0
    out = capsys.readouterr().out
    assert "4 simulated runs, 2 at a time" in out and "[4/4]" in out
    together = json.loads((tmp_path / "two" / "latest" / "summary.json").read_text())
    assert together["complete"] and list(together["presets"]) == ["fifo", "dlcp"]
    assert together["runs"] == alone["runs"] == 4 and together["elapsed_s"] > 0
    assert f"4 run(s) in {together['elapsed_s']:.1f} s; results: " in out
    assert _without_wall_clock(together["presets"]) == _without_wall_clock(json.loads(json.dumps(alone["presets"])))
    for preset in ("fifo", "dlcp"):
        for seed in (2, 3):
            assert (tmp_path / "two" / "latest" / preset / f"seed-{seed}" / "iterations.parquet").is_file()


def _start_side_by_side(root):
    """`compare --jobs 2` over two long runs (byte scale 1) in a session of its own, once both
    say in their simulate.log that they simulate (~20 s each)."""
    import subprocess
    import sys
    import time
    cmd = [sys.executable, "-m", "dlcp_emu.cli", "compare", "examples/default.toml", "--backend", "sim",
           "--presets", "fifo,dlcp", "--seeds", "2", "--jobs", "2", "--vary", "byte_scale=1",
           "--results", str(root)]
    proc = subprocess.Popen(cmd, cwd=Path(__file__).resolve().parent.parent, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    # Each log once: `latest` links to the run's folder, and a log seen twice through it let
    # the test go on while the second run was still being built.
    logs = lambda: [p.read_text() for p in {q.resolve() for q in root.glob("*/fifo,byte_scale=1/seed-*/simulate.log")}]  # noqa: E731
    while sum("virtual" in text for text in logs()) < 2 and proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the runs did not start")
        time.sleep(0.05)
    return proc


def _side_by_side_until(root, act):
    """(output, summary) of `_start_side_by_side` once `act(proc)` has ended it: exit status 1,
    and its session empties (the pool's processes at once, multiprocessing's resource tracker
    as it sees the command's end)."""
    import os
    import signal
    import time
    proc = _start_side_by_side(root)
    try:
        act(proc)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1, out
    deadline = time.monotonic() + 10
    with pytest.raises(ProcessLookupError):
        while time.monotonic() < deadline:
            os.killpg(proc.pid, 0)
            time.sleep(0.05)
    return out, json.loads((root / "latest" / "summary.json").read_text())


@pytest.mark.slow
def test_a_simulation_process_that_dies_ends_the_comparison_with_what_was_measured(tmp_path):
    """A pool process killed mid-run (as the kernel's OOM killer would): the command ends at
    once, saying so in the summary, exit status 1, and no process of it is left."""
    import os
    import signal

    def kill_a_worker(proc):
        workers = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
                   and _parent(p) == proc.pid and b"spawn_main" in (p / "cmdline").read_bytes()]
        assert len(workers) == 2
        os.kill(workers[0], signal.SIGKILL)

    out, summary = _side_by_side_until(tmp_path / "r", kill_a_worker)
    assert summary["stopped_because"].startswith("a simulation process died") and not summary["complete"]
    assert "a simulation process died" in out and "Traceback" not in out


def _parent(proc_dir):
    try:
        return int((proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


@pytest.mark.slow
def test_ctrl_c_keeps_the_runs_under_way_and_starts_no_other(tmp_path):
    """Ctrl-C (SIGINT to the terminal's process group) while two runs simulate side by side:
    both stop where they are and are kept, marked interrupted; the two queued runs never
    start; no process of the pool outlives the command."""
    import os
    import signal
    root = tmp_path / "r"
    out, summary = _side_by_side_until(root, lambda proc: os.killpg(proc.pid, signal.SIGINT))
    assert summary["stopped_because"] == "interrupted (Ctrl-C)" and not summary["complete"]
    fifo = summary["presets"]["fifo,byte_scale=1"]
    assert len(fifo["per_seed"]) == 2 and all(s["interrupted"] for s in fifo["per_seed"]), out
    assert list(summary["presets"]) == ["fifo,byte_scale=1"] and not list(root.glob("*/dlcp*"))


def test_jobs_refuse_runs_that_would_not_fit_in_memory_together(tmp_path, monkeypatch):
    """Each run's gradients fit alone (the spec's own check) but two at once would not: refused
    by name before anything runs or is written. (Should the check let them through, the runs
    are not started: two of them would take most of the machine's memory.)"""
    monkeypatch.setattr(compare, "_side_by_side", lambda *a: pytest.fail("the runs were started"))
    from dlcp_emu.experiment.spec_checks import gradient_memory_bytes, machine_memory_bytes
    one = parse_spec({**{k: v for k, v in TINY.items() if k != "background"}, "byte_scale": 1.0,
                      "topology": {"kind": "star", "hosts": 1, "host_rate_bps": 10e9},
                      "workload": {**TINY["workload"], "workers": 1}})
    workers = int(0.6 * machine_memory_bytes() / gradient_memory_bytes(one))
    big = one.with_field("topology.hosts", workers).with_field("workload.workers", workers)
    assert gradient_memory_bytes(big) == workers * gradient_memory_bytes(one)
    with pytest.raises(ValueError, match=r"--jobs 2: 2 runs at once would hold .* GiB of gradients, more than"):
        compare.compare(big, ["fifo"], seeds=2, backend="sim", root=tmp_path / "r", log=lambda m: None, jobs=2)
    assert not (tmp_path / "r").exists()


def test_jobs_are_for_simulated_runs(tmp_path, capsys):
    path = tmp_path / "tiny.toml"
    path.write_text(_toml(TINY))
    assert main(["compare", str(path), "--backend", "emu", "--jobs", "2", "--results", str(tmp_path)]) == 2
    assert "--jobs 2: only simulated runs (--backend sim) run side by side" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["compare", str(path), "--backend", "sim", "--jobs", "0"])
    assert "--jobs: must be a positive integer, got '0'" in capsys.readouterr().err
    assert main(["compare", str(path), "--backend", "sim", "--jobs", "3", "--dry-run"]) == 0
    assert "would run (sim, 3 at a time)" in capsys.readouterr().out


def test_ctrl_c_stops_a_simulated_run_between_slices_and_keeps_it(tmp_path):
    """SIGINT while a run simulates: the run ends after the slice under way (not wherever the
    signal lands, which could leave the core's batch half handed over), writes its tables as
    an interrupted run, and gives Ctrl-C back to whoever had it."""
    import os
    import signal
    from dlcp_emu.experiment.run import run
    from dlcp_emu.sim.run import SLICE_EVENTS, SimBackend
    spec = parse_spec({**TINY, "byte_scale": 0.1})
    went_on = []

    def log(line):
        if "virtual" in line and not went_on:   # the first slice is done
            os.kill(os.getpid(), signal.SIGINT)
            went_on.append(1)                   # not reached if the signal raised here

    # Python's own Ctrl-C, however the suite was started (a shell's background job inherits
    # SIGINT ignored, and the run then rightly leaves it so).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        s, frames = run(spec, SimBackend(), "fifo", tmp_path, log=log)
        given_back = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert went_on
    assert s["stopped_because"] == "interrupted (Ctrl-C)" and s["interrupted"] and not s["completed"]
    assert s["events"] == SLICE_EVENTS
    assert (tmp_path / "packets.parquet").is_file() and len(frames["packets"]) > 0
    assert given_back is signal.default_int_handler


def test_progress_shows_the_first_and_last_slice_and_between_them_as_often_as_asked(tmp_path, monkeypatch):
    """A progress line a slice when asked every 0 s; asked never, the first slice's and the
    last's only (a long run printed a line every 0.4 s). Slices of 10,000 events, so that
    the tiny run has several (at 200,000 a run needs byte scale 0.1: 6 s of CPU)."""
    from dlcp_emu.experiment.run import run
    from dlcp_emu.sim import run as sim_run
    from dlcp_emu.sim.run import SimBackend
    monkeypatch.setattr(sim_run, "SLICE_EVENTS", 10_000)
    spec = parse_spec(TINY)
    lines = {}
    for every in (0.0, 1e9):
        monkeypatch.setattr(sim_run, "PROGRESS_EVERY_S", every)
        got = []
        s, _ = run(spec, SimBackend(), "fifo", tmp_path / str(every), log=got.append)
        lines[every] = [line.split("wall")[0] for line in got if "virtual" in line]
    slices = -(-s["events"] // sim_run.SLICE_EVENTS)
    assert slices >= 3 and len(lines[0.0]) == slices
    assert lines[1e9] == [lines[0.0][0], lines[0.0][-1]]
    assert f"events {s['events']:,}" in lines[1e9][-1]


def test_no_spurious_retransmissions_at_scaled_rates(tmp_path):
    """The default experiment's network without background: nothing is dropped, so every
    retransmission would be a spurious timeout. With the retransmission floors set from the
    scaled host link (a frame takes milliseconds) there are none; with the microsecond-scale
    defaults a whole message burst after the compute phase used to time out every iteration."""
    from dlcp_emu.experiment.run import run
    from dlcp_emu.sim.run import SimBackend
    spec = parse_spec({**{k: v for k, v in TINY.items() if k != "background"}, "seed": 1,
                       "time_dilation": 4.0,
                       "topology": {**TINY["topology"], "hosts_per_leaf": 3, "delay_ns": 1000}})
    s, frames = run(spec, SimBackend(), "fifo", tmp_path, log=lambda m: None)
    assert s["completed"]
    packets, ports = frames["packets"], frames["ports"]
    assert ports["dropped"].sum() == 0
    data = packets[packets["type"] == 0]
    assert len(data) > 1000
    retransmitted = data["flags"].astype(int) & 2
    assert retransmitted.sum() == 0
    # Nothing dropped, so nothing lost: what had not arrived when the last agent finished
    # (acknowledgements on their way) is in flight, and the simulator knows it.
    assert set(packets["fate"]) <= {"delivered", "in_flight"}


@pytest.mark.slow
def test_compare_sweeps_compression_and_dc2_trades_bytes_for_time(tmp_path, capsys):
    """`compare --vary compression.mode=...` on the tiny spec (2:1 uplinks, background): every
    mode runs, the table grows its compression columns, and compressing sends fewer bytes,
    keeps less of the gradients and finishes iterations sooner than sending them whole."""
    path = tmp_path / "tiny.toml"
    path.write_text(_toml({**TINY, "compression": {"target_delay_ms": 5.0}}))
    code = main(["compare", str(path), "--backend", "sim", "--presets", "fifo", "--vary",
                 "compression.mode=none,fixed,dc2", "--results", str(tmp_path / "r"), "--json"])
    assert code == 0
    capsys.readouterr()
    summary = json.loads((tmp_path / "r" / "latest" / "summary.json").read_text())
    s = summary["presets"]
    assert list(s) == ["fifo,mode=none", "fifo,mode=fixed", "fifo,mode=dc2"]
    assert summary["vary"] == [{"field": "compression.mode", "values": ["none", "fixed", "dc2"]}]
    none, fixed, dc2 = (s[k]["compression"] for k in s)
    assert none["ratio_mean"] == 1.0 and none["wire_fraction"] == 1.0 and none["energy_kept"] == 1.0
    assert none["delay_p50_s"] > 0                   # measured with compression off too
    assert fixed["ratio_mean"] == pytest.approx(0.1) and fixed["wire_fraction"] < 0.25
    assert dc2["ratio_min"] < 1.0 and dc2["wire_fraction"] < 1.0
    for c in (fixed, dc2):
        assert 0 < c["energy_kept"] < 1
    t = {k: s[k]["iteration_time_mean_s"] for k in s}
    assert t["fifo,mode=fixed"] < t["fifo,mode=none"] and t["fifo,mode=dc2"] < t["fifo,mode=none"]
    assert (tmp_path / "r" / "latest" / "fifo,mode=dc2" / "seed-2" / "tensors.parquet").is_file()
    text = compare.table(summary)
    assert "sent" in text and "energy" in text and "fifo,mode=dc2" in text
    pngs = report.draw(tmp_path / "r" / "latest")
    assert pngs[-1].name == "compression.png" and pngs[-1].stat().st_size > 15_000


def test_vary_rejects_a_bad_field_before_running(tmp_path, capsys):
    path = tmp_path / "tiny.toml"
    path.write_text(_toml(TINY))
    assert main(["compare", str(path), "--backend", "sim", "--presets", "fifo", "--vary",
                 "compression.mood=dc2", "--results", str(tmp_path / "r")]) == 2
    assert "compression.mood: unknown field" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
    with pytest.raises(SystemExit):
        main(["compare", str(path), "--vary", "compression.mode"])
    assert "must be FIELD=V1,V2,..." in capsys.readouterr().err


def _toml(d, prefix=""):
    """A spec dict as TOML (flat values first, then one table per sub-dict)."""
    flat = [f"{k} = {json.dumps(v)}" for k, v in d.items() if not isinstance(v, dict)]
    tables = [f"\n[{prefix}{k}]\n" + _toml(v) for k, v in d.items() if isinstance(v, dict)]
    return "\n".join(flat) + "\n" + "".join(tables)


def test_variants_are_every_combination_checked_up_front():
    spec = parse_spec(TINY)
    runs = compare.variants(spec, ["fifo", "dlcp"], [("compression.mode", ["none", "dc2"]),
                                                     ("background.load", [0.1, 0.3])])
    assert [label for label, _, _ in runs] == [
        "fifo,mode=none,load=0.1", "fifo,mode=none,load=0.3", "fifo,mode=dc2,load=0.1",
        "fifo,mode=dc2,load=0.3", "dlcp,mode=none,load=0.1", "dlcp,mode=none,load=0.3",
        "dlcp,mode=dc2,load=0.1", "dlcp,mode=dc2,load=0.3"]
    _, preset, s = runs[3]
    assert preset == "fifo" and s.compression["mode"] == "dc2" and s.background["load"] == 0.3
    assert [label for label, _, _ in compare.variants(spec, ["fifo"])] == ["fifo"]
    with pytest.raises(ValueError, match=r"background.load: 2 is not allowed"):
        compare.variants(spec, ["fifo"], [("background.load", [0.1, 2])])


def test_compare_runs_a_spec_with_a_custom_switch_table(tmp_path):
    """A [switch] table with stages of its own (as the README shows) runs under compare and
    is named after its preset."""
    raw = {**TINY, "workload": {**TINY["workload"], "iterations": 1},
           "switch": {"preset": "dlcp", "queue_manager": {"name": "dlcp", "threshold": 0.3}}}
    spec = parse_spec(raw)
    run_dir, summary = compare.compare(spec, [spec.switch], backend="sim", root=tmp_path,
                                       log=lambda m: None)
    assert list(summary["presets"]) == ["dlcp+custom"]
    s = summary["presets"]["dlcp+custom"]
    assert s["completed"] and s["transport"] == "dlcp"
    assert "threshold=0.3" in s["pipeline"]
