"""`compare --cluster`: simulated runs on a real Dask cluster of two worker processes give the
run folder that the same runs write one at a time, and a run that fails on a worker is
reported with its error while the others are kept."""
import json
import re

import pandas as pd
import pytest

from dlcp_emu.cli import main
from dlcp_emu.experiment.spec import parse_spec
from dlcp_emu.sim.engines import WALL_CLOCK_KEYS
from dlcp_emu.study import compare
from dlcp_emu.study.cluster import check_cluster

from test_experiments_sim import TINY, _toml

TINY_TOML = _toml(TINY)

# What a run's machine and the moment decide, not the runs: the engine's speed figures, when
# the comparison started and how long it took.
WALL_CLOCK = WALL_CLOCK_KEYS | {"started", "elapsed_s"}


def _without_wall_clock(x):
    if isinstance(x, dict):
        return {k: _without_wall_clock(v) for k, v in x.items() if k not in WALL_CLOCK}
    if isinstance(x, list):
        return [_without_wall_clock(v) for v in x]
    return x


@pytest.fixture(scope="module")
def cluster():
    """A running Dask scheduler with two worker processes, as `dask scheduler` and two
    `dask worker` would be: its address."""
    import logging
    from distributed import LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.CRITICAL) as local:
        yield local.scheduler_address


@pytest.mark.slow   # a cluster of processes: seconds, in `make test`
def test_a_cluster_writes_the_run_folder_of_the_runs_one_at_a_time(tmp_path, capsys, cluster):
    """2 presets x 2 seeds on the cluster's two workers: summary.json equal key by key to the
    serial run's but for the wall clock, the same tables with the same rows in every run's
    folder, and a line of progress a run."""
    _, serial = compare.compare(parse_spec(TINY), ["fifo", "dlcp"], seeds=2, backend="sim",
                                root=tmp_path / "serial", log=lambda m: None)
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TOML)
    assert main(["compare", str(path), "--backend", "sim", "--presets", "fifo,dlcp", "--seeds", "2",
                 "--cluster", cluster, "--results", str(tmp_path / "cluster")]) == 0
    out = capsys.readouterr().out
    assert f"4 simulated runs on a Dask cluster of 2 worker(s) ({cluster})" in out
    for run in ("fifo seed 2", "fifo seed 3", "dlcp seed 2", "dlcp seed 3"):
        assert f"] {run} (tcp://" in out, out
    assert "[4/4]" in out
    on_cluster = json.loads((tmp_path / "cluster" / "latest" / "summary.json").read_text())
    serial = json.loads(json.dumps(serial))   # as written: tuples are lists
    assert on_cluster["complete"] and "failed" not in on_cluster
    assert set(on_cluster) == set(serial)
    assert _without_wall_clock(on_cluster) == _without_wall_clock(serial)

    one, many = tmp_path / "serial" / "latest", tmp_path / "cluster" / "latest"
    tables = sorted(p.relative_to(one) for p in one.rglob("*.parquet"))
    assert len(tables) == 4 * 7   # every run's seven tables
    assert sorted(p.relative_to(many) for p in many.rglob("*.parquet")) == tables
    for table in tables:
        pd.testing.assert_frame_equal(pd.read_parquet(many / table), pd.read_parquet(one / table))
    assert "virtual" in (many / "dlcp" / "seed-3" / "simulate.log").read_text()


@pytest.mark.slow
def test_a_run_that_fails_on_a_worker_is_reported_and_the_others_kept(tmp_path):
    """On the local cluster (`--cluster` alone) of two processes: a variant whose transport
    the simulator refuses (kernel TCP) raises on the workers; both of its seeds are listed
    with the error, the other variant's runs are kept whole, and the comparison says it is
    incomplete."""
    import dlcp_emu
    spec = parse_spec({**TINY, "variants": {"fifo": {"switch": {"preset": "fifo"}},
                                            "kernel-tcp": {"transport": {"kind": "tcp"}}}})
    lines = []
    result = dlcp_emu.compare(spec, seeds=2, cluster="local", jobs=2, root=tmp_path, log=lines.append)
    assert lines[0] == "4 simulated runs on a Dask cluster of 2 worker(s) (local)"
    assert not result.complete and result.variants == ["fifo"]
    assert sorted((f["run"], f["seed"]) for f in result.failed) == [("kernel-tcp", 2), ("kernel-tcp", 3)]
    for f in result.failed:
        assert f["error"].startswith("ValueError: transport.kind: 'tcp' runs in emulation only")
    assert sum("kernel-tcp seed" in line and ": failed: ValueError" in line for line in lines) == 2
    assert list(result.per_seed["seed"]) == [2, 3] and result.per_seed["completed"].all()
    assert set(result.iterations["seed"]) == {2, 3} and not (result.path / "kernel-tcp").exists()
    assert json.loads((result.path / "summary.json").read_text())["failed"] == result.failed


@pytest.mark.parametrize("cluster, backend, jobs, message", [
    ("local", "emu", 1, "--cluster: only simulated runs (--backend sim)"),
    ("my-laptop", "sim", 1, "--cluster: 'my-laptop' is not a scheduler's address; give HOST:PORT"),
    ("tcp://10.0.0.1:8786", "sim", 2, "--jobs 2: a running cluster's workers decide"),
])
def test_what_cannot_run_on_a_cluster_is_refused_by_name(cluster, backend, jobs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        check_cluster(cluster, backend, jobs)


def test_the_command_refuses_a_cluster_for_emulation_before_anything_runs(tmp_path, capsys):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TOML)
    assert main(["compare", str(path), "--cluster", "--results", str(tmp_path / "r")]) == 2
    assert "--cluster: only simulated runs (--backend sim)" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_addresses_a_scheduler_prints_are_taken():
    for address in ("tcp://192.168.1.10:8786", "node-3.cluster:8786", "127.0.0.1:40123", "[::1]:8786",
                    "tls://head:8786", "local"):
        check_cluster(address, "sim", 1)


def test_a_local_cluster_refuses_runs_that_would_not_fit_in_memory_together(tmp_path, monkeypatch):
    """Its processes share this machine's memory as --jobs' do: two runs that fit alone but
    not together are refused by name before the cluster starts or anything is written."""
    from dlcp_emu.experiment.spec_checks import gradient_memory_bytes, machine_memory_bytes
    from dlcp_emu.study import cluster
    monkeypatch.setattr(cluster, "on_cluster", lambda *a: pytest.fail("the cluster was started"))
    one = parse_spec({**{k: v for k, v in TINY.items() if k != "background"}, "byte_scale": 1.0,
                      "topology": {"kind": "star", "hosts": 1, "host_rate_bps": 10e9},
                      "workload": {**TINY["workload"], "workers": 1}})
    workers = int(0.6 * machine_memory_bytes() / gradient_memory_bytes(one))
    big = one.with_field("topology.hosts", workers).with_field("workload.workers", workers)
    with pytest.raises(ValueError, match=r"^--cluster \(2 local processes\): 2 runs at once would hold .* GiB"
                                         r".*; give fewer with --jobs N, or run without --cluster"):
        compare.compare(big, ["fifo"], seeds=2, backend="sim", root=tmp_path / "r", log=lambda m: None,
                        jobs=2, cluster="local")
    assert not (tmp_path / "r").exists()


def test_an_address_where_nothing_answers_is_refused_before_anything_is_written(tmp_path, capsys):
    import socket
    with socket.socket() as s:   # a port of this machine that nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TOML)
    assert main(["compare", str(path), "--backend", "sim", "--cluster", f"tcp://127.0.0.1:{port}",
                 "--results", str(tmp_path / "r")]) == 2
    assert f"--cluster tcp://127.0.0.1:{port}: nothing answers there (Connection refused); start a " \
           "scheduler with `dask scheduler`" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_a_spec_written_after_a_bare_cluster_flag_is_said_to_be_no_address(tmp_path, capsys):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TOML)
    with pytest.raises(SystemExit) as stop:
        main(["compare", "--backend", "sim", "--cluster", str(path)])
    assert stop.value.code == 2
    assert f"argument --cluster: {str(path)!r} is not a scheduler's address; give HOST:PORT" in capsys.readouterr().err


def test_without_dask_the_flag_says_what_to_install_before_anything_is_written(tmp_path):
    import subprocess
    import sys
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TOML)
    code = ("import sys; sys.modules['distributed'] = None; from dlcp_emu.cli import main; "
            f"sys.exit(main(['compare', {str(path)!r}, '--backend', 'sim', '--cluster', "
            f"'--results', {str(tmp_path / 'r')!r}]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr == ("dlcp-emu: --cluster needs Dask.distributed: `make setup` installs it "
                        "(requirements.txt), or `pip install 'dlcp-emu[cluster]'`\n")
    assert not (tmp_path / "r").exists()
