"""What every per-host process of an emulation (`hostd`, `background`, `bgtraffic`) starts
with: its JSON config from `--config FILE`, and a stop flag that SIGTERM and SIGINT raise, so
the loop ends in order and writes what it measured."""
import argparse
import json
import signal


def config_and_stop_flag(prog, argv=None):
    """(config dict, stopping): `stopping` is a list, non-empty once asked to stop."""
    p = argparse.ArgumentParser(prog=prog)
    p.add_argument("--config", required=True)
    with open(p.parse_args(argv).config) as f:
        cfg = json.load(f)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    return cfg, stopping
