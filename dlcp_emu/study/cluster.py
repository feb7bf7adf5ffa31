"""`compare --cluster`: a comparison's simulated runs on a Dask cluster (docs/cluster.md).

Dask.distributed rather than Ray: the runs are independent tasks of a few seconds to minutes,
which is exactly what its futures do; it is pure Python wheels from PyPI (Ray ships a
~70 MB native runtime and its own object store); a `LocalCluster` of processes is one line
here, and several machines need only `dask scheduler` on one and `dask worker ADDRESS` on
each, from the same .venv.

A run simulates on a worker in a temporary folder of the worker's own and comes back as its
summary and the files it wrote, which the caller writes into the run folder as it ends: the
folder is the one the same runs write one at a time, whichever machine ran them, and the
machines share no disk. A run that raises there is reported with its error (`fail`) and the
others go on.
"""
import contextlib
import logging
import os
import re
import socket
import tempfile
import uuid
from pathlib import Path

from dlcp_emu import huge_pages
from dlcp_emu.study.pools import SIMULATE_LOG, outcome

LOCAL = "local"
CONNECT_TIMEOUT_S = 20
_ADDRESS = re.compile(r"^((tcp|tls)://)?(?P<host>[A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:.]+\]):(?P<port>\d{1,5})$")


def check_cluster(cluster, backend, jobs):
    """ValueError naming --cluster (or --jobs) for what cannot run on a cluster."""
    if backend != "sim":
        raise ValueError("--cluster: only simulated runs (--backend sim) run on a cluster; an "
                         "emulation has its machine to itself")
    if cluster == LOCAL:
        return
    check_address(cluster)
    if jobs != 1:
        raise ValueError(f"--jobs {jobs}: a running cluster's workers decide how many runs go at once; "
                         "--jobs sizes the local cluster that --cluster without an address starts")


def check_address(cluster):
    """ValueError naming --cluster unless `cluster` is "local" or HOST:PORT, tcp:// or tls://."""
    if cluster != LOCAL and (not isinstance(cluster, str) or not _ADDRESS.match(cluster)):
        raise ValueError(f"--cluster: {cluster!r} is not a scheduler's address; give HOST:PORT or "
                         "tcp://HOST:PORT (what `dask scheduler` prints), or no value for a local cluster")


def reach(cluster):
    """RuntimeError naming --cluster unless Dask.distributed is installed and something answers
    at the scheduler's address: said before a run folder is made, where a typo would otherwise
    wait out the client's timeout."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise RuntimeError("--cluster needs Dask.distributed: `make setup` installs it "
                           "(requirements.txt), or `pip install 'dlcp-emu[cluster]'`") from None
    if cluster == LOCAL:
        return
    m = _ADDRESS.match(cluster)
    try:
        socket.create_connection((m["host"].strip("[]"), int(m["port"])), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise RuntimeError(f"--cluster {cluster}: nothing answers there ({e.strerror or e}); start a "
                           "scheduler with `dask scheduler` (docs/cluster.md)") from None


def local_workers(jobs):
    """The processes of the local cluster: `jobs`, or one a core when jobs is 1."""
    return jobs if jobs > 1 else os.cpu_count() or 1


@contextlib.contextmanager
def client_for(cluster, jobs=1):
    """A Dask client: of a local cluster of `jobs` processes (a process a core when jobs is 1),
    closed after, or of the running scheduler at `cluster`."""
    from distributed import Client, LocalCluster
    if cluster == LOCAL:
        # No memory limit of Dask's own: the spec's check and --jobs' check already hold the
        # runs to this machine's memory, and Dask's share (memory / workers) would kill a run
        # that fits. Its web server on a free port: 8787 may be taken (another cluster).
        with huge_pages.for_children():
            local = LocalCluster(n_workers=local_workers(jobs), threads_per_worker=1,
                                 processes=True, memory_limit=0, dashboard_address=":0",
                                 silence_logs=logging.CRITICAL)
        with local, Client(local) as client:
            yield client
        return
    try:
        client = Client(cluster, timeout=CONNECT_TIMEOUT_S)
    except OSError as e:   # TimeoutError too
        raise RuntimeError(f"--cluster {cluster}: no Dask scheduler answered there ({e}); start one "
                           "with `dask scheduler` (docs/cluster.md)") from None
    with client:
        yield client


def on_cluster(tasks, cluster, jobs, run_dir, record, fail, log):
    """Every task simulated on the cluster; `record(task, summary)` as each ends, with its
    files in the run folder, or `fail(task, error text)` if it raised there. A line of progress
    a run."""
    from distributed import as_completed
    with client_for(cluster, jobs) as client:
        workers = len(client.scheduler_info(n_workers=-1)["workers"])
        log(f"{len(tasks)} simulated runs on a Dask cluster of {workers} worker(s) "
            f"({'local' if cluster == LOCAL else cluster})" + ("; none yet: the runs wait for one" if not workers else ""))
        batch = uuid.uuid4().hex[:8]   # keys unique on a scheduler that other comparisons share
        futures = {client.submit(simulate_remote, t.spec, t.preset, pure=False, retries=0,
                                 key=f"dlcp-emu-{batch}-{i}"): t for i, t in enumerate(tasks)}
        ended = 0
        try:
            for future in as_completed(futures):
                task = futures[future]
                ended += 1
                head = f"  [{ended}/{len(tasks)}] {task.label} seed {task.spec.seed}"
                if future.status != "finished":
                    error = _error_text(future.exception())
                    log(f"{head}: failed: {error}")
                    fail(task, error)
                    continue
                summary, files, worker = future.result()
                _write_files(run_dir / task.folder, files)
                log(f"{head} ({worker}): {outcome(summary)}")
                record(task, summary)
        except KeyboardInterrupt:
            client.cancel(list(futures))   # queued runs do not start; the local cluster closes
            raise


def simulate_remote(spec, preset):
    """On a worker: one run in a temporary folder -> (summary, {relative path: bytes}, where)."""
    from distributed import get_worker
    from dlcp_emu.experiment.run import run
    from dlcp_emu.sim.run import SimBackend
    with tempfile.TemporaryDirectory(prefix="dlcp-emu-run-") as tmp:
        folder = Path(tmp)
        with open(folder / SIMULATE_LOG, "w") as f:
            summary, _ = run(spec, SimBackend(), preset, folder, log=lambda m: print(m, file=f, flush=True))
        files = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    return summary, files, get_worker().address


def _write_files(folder, files):
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _error_text(exc):
    text = str(exc).strip()
    return type(exc).__name__ + (f": {text}" if text else "")
