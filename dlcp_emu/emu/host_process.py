"""What every per-host process of an emulation (`hostd`, `background_udp`, `background_tcp`) starts
with: its config from `--config FILE` (`host_configs`), a stop flag that SIGTERM and SIGINT raise, so the
loop ends in order and writes what it measured (the runner's death raises SIGTERM too), and
the common start.

The common start is a barrier, not a fixed time: each process says it is ready once its
sockets are bound (`ready_file`), and the runner, once every process is, writes the start
time to `start_file`. A fixed start two seconds after launch was missed by 1-2 s on a loaded
machine (importing numpy and loading the trace), and a host that sent before its peer had
bound its socket lost its first window to port-unreachable, which no switch counted.
"""
import argparse
import json
import os
import signal
import time

from dlcp_emu.emu.lifeline import follow_parent_from_env
from dlcp_emu.emu.process_config import ConfigError


def config_and_stop_flag(config_class, argv=None):
    """(config, stopping): the config_class (a `host_configs.StartedProcessConfig`) read from
    --config; `stopping` is a list, non-empty once asked to stop. The process ends with the
    runner that started it (`lifeline`), and runs on the config's `cpus` if it names them
    (emu/placement.py), at its `nice` if it gives one."""
    prog = config_class.program
    follow_parent_from_env(prog)
    p = argparse.ArgumentParser(prog=prog)
    p.add_argument("--config", required=True)
    try:
        cfg = config_class.read(p.parse_args(argv).config)
    except (OSError, ConfigError) as e:
        raise SystemExit(f"{prog}: {e}") from None
    if cfg.cpus:
        os.sched_setaffinity(0, cfg.cpus)
    if cfg.nice:
        os.setpriority(os.PRIO_PROCESS, 0, cfg.nice)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    return cfg, stopping


def wait_for_start(cfg, stopping, clock=time.monotonic_ns, delay_ns=0):
    """Say this process is ready, wait for the runner's start time (CLOCK_MONOTONIC ns, the
    same in every namespace) and then for that time, plus delay_ns (a job that starts later).
    Returns it; None if asked to stop first."""
    with open(cfg.ready_file, "w"):
        pass
    start = None
    while start is None and not stopping:
        try:
            with open(cfg.start_file) as f:
                start = json.load(f)["start_at_ns"] + delay_ns
        except FileNotFoundError:
            time.sleep(0.002)
    while start is not None and clock() < start and not stopping:
        time.sleep(min(0.01, max(0, (start - clock()) / 1e9)))
    return None if stopping else start


def write_start(path, start_at_ns):
    """The runner's half of the barrier: the start time, written whole (rename) or not at all."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump({"start_at_ns": start_at_ns}, f)
    os.replace(tmp, path)
