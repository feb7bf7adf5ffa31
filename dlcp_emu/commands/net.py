"""`dlcp-emu net SPEC`: the spec's network on Mininet, its hosts behind our switches (the
spec's preset, its scaled link rates, paced host links, as a run builds them), and Mininet's
CLI on it: `h1 ping h2`, `iperf h1 h2`, `h1 tcpdump -ni h1-eth0`, your own programs, and
`ports` (the switches' live view). `exit`, Ctrl-D, an error or SIGTERM stops the network and
removes everything it created; the switches' stats stay in the results folder."""
import json
import sys
from pathlib import Path

from dlcp_emu.commands.argtypes import input_file, name, output_dir


def add_parser(sub):
    p = sub.add_parser("net", help="build a spec's network with its switches and open Mininet's "
                                   "CLI on it (root)")
    p.add_argument("spec", type=Path, help="experiment spec (TOML): its topology, switch preset, "
                                           "scale and MTU are used; the workload is not run")
    p.add_argument("--preset", type=name, help="switch preset (default: the spec's [switch])")
    p.add_argument("--script", type=input_file, metavar="FILE",
                   help="run the CLI commands in FILE (one a line) instead of reading them; "
                        "commands piped to standard input run the same way")
    p.add_argument("--results", type=output_dir, default=Path("results"),
                   help="the switches' configs and stats go to RESULTS/<time>-<spec>-net/ "
                        "(default results/)")
    p.set_defaults(func=_net)
    return p


def _rates(topo):
    rates = sorted({link.rate_bps for link in topo.links})
    return ", ".join(f"{r / 1e6:g} Mbit/s" for r in rates)


def _net(args):
    from dlcp_emu.commands.run import _check_presets, _load, _need_root
    spec = _load(args.spec)
    if spec is None or (args.preset and _check_presets([args.preset])) or _need_root("emu"):
        return 2
    from dlcp_emu.emu.mncli import session
    from dlcp_emu.emu.net import EmulationRun, RunTerminated
    from dlcp_emu.emu.run import SWITCH_RT_PRIORITY
    from dlcp_emu.experiment import results
    from dlcp_emu.experiment.topology import scaled_topology
    from switch_models import PipelineSpec
    pipeline = args.preset or (spec.switch["preset"] if set(spec.switch) == {"preset"} else spec.switch)
    topo = scaled_topology(spec)
    try:
        run_dir = results.new_run_dir(args.results, f"{spec.name}-net")
    except RuntimeError as e:
        print(f"dlcp-emu: {e}", file=sys.stderr)
        return 2
    run = EmulationRun(topo, pipeline, seed=spec.seed, static_arp=True, run_dir=str(run_dir / "emu"),
                       switch_opts={"rt_priority": SWITCH_RT_PRIORITY}, mtu=spec.mtu, pace_hosts=True)
    print(f"dlcp-emu net: {topo.summary()}, switches run preset {PipelineSpec.parse(pipeline).name}; links at "
          f"{_rates(topo)} (the spec's rates x byte_scale {spec.byte_scale:g} / time_dilation "
          f"{spec.time_dilation:g}), MTU {spec.mtu}", flush=True)
    why = None
    try:
        with run:
            hosts = ", ".join(f"{h} {topo.host_ip(h)}" for h in topo.hosts())
            print(f"  hosts: {hosts}\n  e.g. `h1 ping -c3 {topo.hosts()[-1]}`, `iperf h1 "
                  f"{topo.hosts()[-1]}`, `h1 tcpdump -c5 -ni h1-eth0`, `ports`; `exit` or Ctrl-D "
                  "stops and removes the network", flush=True)
            session(run.net, script=str(args.script) if args.script else None)
    except RunTerminated:
        why = "stopped by SIGTERM"
    except KeyboardInterrupt:
        why = "interrupted (Ctrl-C)"
    except RuntimeError as e:        # the net could not be built (e.g. another emulation runs)
        print(f"dlcp-emu net: {e}", file=sys.stderr)
        return 1
    return _report(run, run_dir, why)


def _fates(stats, checked):
    """' (dropped by the switches: ..., ...)': where frames that went nowhere went, by reason."""
    dropped = {}
    for st in stats.values():
        for reason, k in st.get("conservation", {}).get("dropped", {}).items():
            dropped[reason] = dropped.get(reason, 0) + k
    for reason, k in (checked or {}).get("lost", {}).items():
        dropped[reason] = dropped.get(reason, 0) + k
    parts = [f"{r} {k:,}" for r, k in sorted(dropped.items()) if k]
    discarded = (checked or {}).get("host_discarded")
    if discarded:
        parts.append(f"delivered and discarded by the hosts' kernels {discarded:,}")
    return f" ({', '.join(parts)})" if parts else ""


def _report(run, run_dir, why):
    """What the switches did, and that nothing was lost: written and said."""
    stats = {k: v for k, v in run.stats.items() if v}
    for st in stats.values():
        st.pop("queue_samples", None)
    (run_dir / "switches.json").write_text(json.dumps(stats, indent=1, default=str))
    (run_dir / "links.json").write_text(json.dumps(run.links, indent=1))
    frames = sum(sum(st["tx_frames"].values()) for st in stats.values())
    conserved = bool(stats) and all(st["conservation"]["ok"] for st in stats.values())
    links_ok = bool(run.links and run.links.get("ok"))
    print(f"dlcp-emu net: {why + '; ' if why else ''}network stopped and removed. The switches "
          f"sent {frames:,} frames; every frame accounted: "
          f"{'yes' if conserved and links_ok else 'NO (see switches.json, links.json)'}"
          f"{_fates(stats, run.links)}. Stats: {run_dir}", flush=True)
    return 1 if why else 0
