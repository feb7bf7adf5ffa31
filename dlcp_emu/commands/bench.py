"""`dlcp-emu bench ...`: benchmarks that print figures (JSON with --json)."""
import json
import os
import sys
from pathlib import Path

from switch_models import preset_names

from dlcp_emu.commands.argtypes import (
    fat_tree_k, name, name_list, number_at_least, open_fraction, output_dir, output_file, positive_int,
    positive_int_list,
)


def add_parser(sub):
    p = sub.add_parser("bench", help="measure packets per second and latency")
    kinds = p.add_subparsers(dest="bench", required=True, metavar="WHAT")
    m = kinds.add_parser("model", help="the switch pipeline in process: native and Python on the same packets")
    m.add_argument("--preset", default="dlcp", choices=preset_names(), metavar="NAME",
                   help=f"switch preset (one of: {', '.join(preset_names())})")
    m.add_argument("--packets", type=positive_int, default=200_000)
    m.add_argument("--repeat", type=positive_int, default=3, help="runs; the best is reported")
    m.add_argument("--json", action="store_true", help="print one JSON object")
    m.set_defaults(func=_bench_model)
    _add_switch(kinds)
    _add_soak(kinds)
    _add_transport(kinds)
    h = kinds.add_parser("host", help="a host's data plane, compiled and Python: one message over loopback UDP")
    h.add_argument("--megabytes", type=number_at_least(0, lo_open=True), default=100,
                   help="the message (default 100 MB)")
    h.add_argument("--json", action="store_true", help="print one JSON object")
    h.set_defaults(func=_bench_host)
    sim = kinds.add_parser("sim", help="packet-hops per second of the simulator, and how wall time grows")
    sim.add_argument("--k", type=fat_tree_k, default=8, help="fat-tree k (default 8: 128 hosts)")
    sim.add_argument("--repeat", type=positive_int, default=3, help="runs per size; the fastest counts (default 3)")
    sim.add_argument("--plot", type=output_file, metavar="PNG", help="also plot wall time against packet-hops")
    sim.add_argument("--spec", type=Path, default=Path("examples/default.toml"),
                     help="the spec of the end-to-end run (default examples/default.toml)")
    sim.add_argument("--byte-scale", type=number_at_least(0, lo_open=True), default=0.1,
                     help="its byte scale (default 0.1)")
    sim.add_argument("--iterations", type=positive_int, default=1, help="its iterations (default 1)")
    sim.add_argument("--json", action="store_true", help="print one JSON object")
    sim.set_defaults(func=_bench_sim)
    ht = kinds.add_parser("htsim", help="flow completion times beside htsim's on shared scenarios "
                          "(tests/reference/htsim; docs/baselines.md)")
    ht.add_argument("--scenarios", type=name_list, metavar="A,B", help="incast-8, incast-16, incast-32, "
                    "permutation-16 (default: all)")
    ht.add_argument("--transports", type=name_list, metavar="A,B", help="tcp, dctcp, ndp (default: all)")
    ht.add_argument("--buffers", type=positive_int_list, metavar="N,N",
                    help="port buffers in full frames (default: 32,64,170,1000,10000)")
    ht.add_argument("--dctcp-incast", action="store_true",
                    help="instead: htsim's DCTCP/TCP incast on its own constants (10 Gbit/s, 9000-byte "
                    "packets, k=8 fat tree; tests/reference/htsim/dctcp)")
    ht.add_argument("--draws", type=positive_int, help="with --dctcp-incast: path draws of ours a run "
                    "(switch seeds 0..N-1; default: as many as htsim's, 8)")
    ht.add_argument("--speed", action="store_true",
                    help="instead: data packet-hops a second of the whole command, ours and htsim's, on a "
                    "ring of 100 MB flows over 8 and 128 hosts (dlcp_emu/study/htsim_speed.py)")
    ht.add_argument("--htsim", type=Path, metavar="PATH", help="with --speed: htsim's htsim_ndp, run side by "
                    "side (default: htsim's figures stored in tests/reference/htsim/speed)")
    ht.add_argument("--hosts", type=positive_int_list, metavar="N,N", help="with --speed: ring sizes (default 8,128)")
    ht.add_argument("--json", action="store_true", help="print one JSON list, a row a run")
    ht.set_defaults(func=_bench_htsim)
    return p


def _bench_htsim(args):
    from dlcp_emu.study import baselines
    if args.speed:
        return _bench_htsim_speed(args)
    if args.htsim or args.hosts:
        print("dlcp-emu bench htsim: --htsim and --hosts go with --speed", file=sys.stderr)
        return 2
    if args.dctcp_incast:
        return _bench_htsim_dctcp(args)
    if args.draws:
        print("dlcp-emu bench htsim: --draws goes with --dctcp-incast (the other scenarios have one path "
              "or spray every packet)", file=sys.stderr)
        return 2
    chosen = dict(scenarios=args.scenarios or tuple(baselines.SCENARIOS),
                  transports=args.transports or baselines.TRANSPORTS, buffers=args.buffers or baselines.BUFFER_FRAMES)
    return _htsim_rows(args, baselines, **chosen)


def _bench_htsim_speed(args):
    from dlcp_emu.study import htsim_speed
    if args.dctcp_incast or args.scenarios or args.transports or args.buffers or args.draws:
        print("dlcp-emu bench htsim: --speed runs its own ring: no --dctcp-incast, --scenarios, --transports, "
              "--buffers or --draws", file=sys.stderr)
        return 2
    if args.htsim is not None and not args.htsim.is_file():
        print(f"dlcp-emu bench htsim: --htsim: no file at {args.htsim}", file=sys.stderr)
        return 2
    return _htsim_rows(args, htsim_speed, hosts=tuple(args.hosts or htsim_speed.HOSTS), htsim=args.htsim)


def _bench_htsim_dctcp(args):
    from dlcp_emu.study import htsim_dctcp
    if args.scenarios or args.transports or args.buffers:
        print("dlcp-emu bench htsim: --dctcp-incast runs htsim's runs as they are: no --scenarios, "
              "--transports or --buffers", file=sys.stderr)
        return 2
    return _htsim_rows(args, htsim_dctcp, draws=args.draws or htsim_dctcp.DRAWS)


def _htsim_rows(args, study, **chosen):
    """Run a study's side-by-side with htsim and print its rows (JSON or a table)."""
    try:
        rows = study.compare(**chosen)
    except ValueError as e:
        print(f"dlcp-emu bench htsim: {e}", file=sys.stderr)
        return 2
    print(json.dumps(rows) if args.json else study.markdown(rows))
    return 0


def _bench_host(args):
    from dlcp_emu.tools import bench_host
    r = bench_host.run(args.megabytes)
    if args.json:
        print(json.dumps(r))
    else:
        print(f"one {r['megabytes']:g} MB message, MTU {r['mtu']}, {r['path']}")
        for t in ("dlcp", "reliable"):
            x = r[t]
            print(f"  {t:8s} native {x['pps']:>9,} packets/s ({x['seconds']} s)   python {x['python_pps']:>8,} "
                  f"packets/s ({x['python_seconds']} s)   {x['ratio']}x   intact: {x['intact']}")
    return 0 if all(r[t]["intact"] for t in ("dlcp", "reliable")) else 1


def _bench_model(args):
    from dlcp_emu.tools import bench_model
    runs = [bench_model.run(args.preset, packets=args.packets, seed=i + 1) for i in range(args.repeat)]
    best = max(runs, key=lambda r: r["pps"])
    best_python = max(runs, key=lambda r: r["python_pps"])
    for key in ("python_seconds", "python_pps", "python_ns_per_packet"):
        best[key] = best_python[key]
    best["ratio"] = round(best["pps"] / best["python_pps"], 1)
    best["runs_pps"] = [r["pps"] for r in runs]
    best["python_runs_pps"] = [r["python_pps"] for r in runs]
    ok = all(r["conserved"] and r["identical"] for r in runs)
    best["conserved"] = all(r["conserved"] for r in runs)
    best["identical"] = all(r["identical"] for r in runs)
    if args.json:
        print(json.dumps(best))
    else:
        print(f"{best['pipeline']} (best of {args.repeat})\n"
              f"  native: {best['pps']:,} packets/s ({best['ns_per_packet']} ns a packet; "
              f"{', '.join(f'{p:,}' for p in best['runs_pps'])}), run_batch\n"
              f"  python: {best['python_pps']:,} packets/s ({best['python_ns_per_packet']} ns a packet; "
              f"{', '.join(f'{p:,}' for p in best['python_runs_pps'])})\n"
              f"  native / python = {best['ratio']}x; {best['forwarded']:,} forwarded, "
              f"{best['dropped']:,} dropped, conserved={best['conserved']}, identical={best['identical']}")
    return 0 if ok else 1


def _bench_sim(args):
    from dlcp_emu.tools import bench_sim
    log = None if args.json else lambda m: print(m, file=sys.stderr, flush=True)
    result = bench_sim.scaling_curve(k=args.k, repeat=args.repeat)
    e2e = bench_sim.end_to_end(args.spec, byte_scale=args.byte_scale, iterations=args.iterations, log=log)
    grow = bench_sim.growth(log=log)
    sched = bench_sim.schedule(log=log)
    ring = bench_sim.ring(log=log)
    net = result["engines"]
    out = {"packet_hops_per_s": e2e["native"]["packet_hops_per_s"],
           "python_packet_hops_per_s": e2e["python"]["packet_hops_per_s"],
           "ratio": round(e2e["native"]["packet_hops_per_s"] / e2e["python"]["packet_hops_per_s"], 2),
           "native_network_packet_hops_per_s": e2e["native_network"]["packet_hops_per_s"],
           "identical": e2e["identical"] and sched["identical"] and ring["identical"],
           "schedule_packet_hops_per_s": sched["core"]["packet_hops_per_s"], "schedule_ratio": sched["ratio"],
           "ring_packet_hops_per_s": ring["core"]["packet_hops_per_s"], "ring_ratio": ring["ratio"],
           "network_packet_hops_per_s": net["native"]["packet_hops_per_s"],
           "network_python_packet_hops_per_s": net["python"]["packet_hops_per_s"],
           "network_ratio": round(net["native"]["packet_hops_per_s"] / net["python"]["packet_hops_per_s"], 1),
           "k": args.k, "end_to_end": e2e, "growth": grow, "schedule": sched, "ring": ring,
           **result}
    if args.plot:
        bench_sim.plot(result, args.plot)
    if args.json:
        print(json.dumps(out))
        return 0 if out["identical"] else 1
    print(f"network alone: fat-tree k={args.k}, permutation traffic, dlcp preset (fastest of {args.repeat}):")
    for engine, r in net.items():
        print(f"  {engine}:")
        for c in r["curve"]:
            print(f"    {c['packet_hops']:>9,} packet-hops in {c['seconds']:7.3f} s: {c['packet_hops_per_s']:>11,}/s")
        print(f"    wall time = {r['fit_intercept_s']:.4f} s + {r['ns_per_packet_hop']:g} ns x packet-hops "
              f"(R² {r['fit_r2']})")
    print(f"  native / python = {out['network_ratio']}x")
    print(f"end to end (hosts, transports, agents): {e2e['spec']} {e2e['preset']}, byte scale "
          f"{e2e['byte_scale']:g}, {e2e['iterations']} iteration(s):")
    ways = {"native": "native engine, endpoints in the core", "native_network": "native network, endpoints "
            "in Python", "python": "Python engine"}
    for way, what in ways.items():
        r = e2e[way]
        core = "" if r["core_s"] is None else f"; {r['core_s']:.2f} s of it in the core"
        print(f"  {what}: {r['packet_hops']:,} packet-hops in {r['wall_s']:.2f} s: {r['packet_hops_per_s']:,}/s "
              f"({r['cpu_s']:.2f} CPU-s, every thread: {r['packet_hops_per_cpu_s']:,} a CPU-second{core})")
    print(f"  native / python = {out['ratio']}x; summaries identical: {e2e['identical']}")
    print("how a whole run's cost grows (native engine, endpoints in the core):")
    for what, key, caveat in (
            ("bytes: default.toml, dlcp, 1 iteration, byte scale", "byte_scale", None),
            ("hosts: ring over a fat tree, payload-free, hosts", "hosts",
             "no straight line: at fixed bytes a ring's messages grow as hosts squared, and each costs "
             "Python and the core")):
        g = grow[what.split(":")[0]]
        print(f"  {what}:")
        for r in g["runs"]:
            print(f"    {r[key]:>6g}: {r['packet_hops']:>11,} packet-hops in {r['wall_s']:7.2f} s: "
                  f"{r['packet_hops_per_s']:>11,}/s")
        print(f"    wall time = {g['fit_intercept_s']:.3f} s + {g['ns_per_packet_hop']:g} ns x packet-hops "
              f"(R² {g['fit_r2']})")
        if caveat:
            print(f"    ({caveat})")
    print(f"a schedule: {sched['spec']} {sched['preset']}, byte scale {sched['byte_scale']:g}, "
          f"{sched['iterations']} iteration(s), payload "
          f"{sched['payload']}, native engine, endpoints in the core:")
    for agents, what in (("core", "schedule agents in the core"), ("python", "schedule agents in Python")):
        r = sched[agents]
        print(f"  {what}: {r['packet_hops']:,} packet-hops in {r['wall_s']:.2f} s ({r['core_s']:.2f} s in the "
              f"core): {r['packet_hops_per_s']:,}/s")
    print(f"  core / python agents = {sched['ratio']}x; summaries identical: {sched['identical']}")
    print(f"a payload-free ring: fat-tree-1024-sim.toml over {ring['hosts']} hosts, byte scale "
          f"{ring['byte_scale']:g}, {ring['preset']}, native engine, endpoints in the core:")
    for agents, what in (("core", "collective steps in the core"), ("python", "collective steps in the Python worker")):
        r = ring[agents]
        print(f"  {what}: {r['packet_hops']:,} packet-hops in {r['wall_s']:.2f} s ({r['run_cpu_s']:.2f} CPU-s, "
              f"{r['core_cpu_s']:.2f} of it in the core): {r['packet_hops_per_s']:,}/s")
    print(f"  core / python = {ring['ratio']}x; summaries identical: {ring['identical']}")
    print(f"this machine: {result['python_loop_ns']} ns a plain Python loop iteration; building a fat "
          f"tree k=16 (1024 hosts) and one switch's routes: {result['fat_tree_k16_build_s']:.3f} s")
    if args.plot:
        print(f"plot: {args.plot}")
    return 0 if out["identical"] else 1


def _add_switch(kinds):
    s = kinds.add_parser("switch", help="one switch between two hosts (root): pps, loss, "
                                        "latency of dlcp vs pass-through vs Linux bridge")
    s.add_argument("--trial-seconds", type=number_at_least(0, lo_open=True), default=2.0,
                   help="length of each trial")
    s.add_argument("--skip-bridge", action="store_true")
    s.add_argument("--no-realtime", action="store_true",
                   help="run the switch process as an ordinary task (emulations run it as a "
                        "real-time one, and so does the benchmark by default)")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(func=_bench_switch)
    return s


def _bench_switch(args):
    if os.geteuid() != 0:
        print("dlcp-emu bench switch: needs root (Mininet, namespaces, AF_PACKET)", file=sys.stderr)
        return 1
    if (os.cpu_count() or 1) < 2:
        print("dlcp-emu bench switch: needs 2 CPUs (switch on one, generator on the other)",
              file=sys.stderr)
        return 1
    from dlcp_emu.tools.bench_switch import run
    result = run(trial_s=args.trial_seconds, bridge=not args.skip_bridge, realtime=not args.no_realtime,
                 log=None if args.json else lambda m: print(m, file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            if k != "detail":
                print(f"{k}: {v}")
        print("(every trial, with its latencies: --json, under `detail`)")
    return 0


def _add_soak(kinds):
    s = kinds.add_parser("soak", help="one emulation at steady load for minutes (root): memory "
                                      "of every process, switch lateness, fidelity, conservation")
    s.add_argument("--minutes", type=number_at_least(0, lo_open=True), default=30.0,
                   help="how long the emulation runs (default 30)")
    s.add_argument("--spec", type=Path, default=None,
                   help="experiment spec (default examples/soak.toml); its time limit becomes --minutes")
    s.add_argument("--preset", type=name, default=None, help="switch preset (default: the spec's)")
    s.add_argument("--sample-seconds", type=number_at_least(0.5), default=10.0,
                   help="how often memory and lateness are sampled (default 10)")
    s.add_argument("--warmup-minutes", type=number_at_least(0), default=None,
                   help="growth is measured after this (default a third of the run, at least 5 "
                        "minutes, at most half)")
    s.add_argument("--results", type=output_dir, default=Path("results"),
                   help="results root (default results/)")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(func=_bench_soak)
    return s


def _bench_soak(args):
    if os.geteuid() != 0:
        print("dlcp-emu bench soak: needs root (Mininet, namespaces, AF_PACKET)", file=sys.stderr)
        return 1
    from dlcp_emu.experiment.spec import SpecError
    from dlcp_emu.tools import bench_soak
    if args.warmup_minutes is not None and args.warmup_minutes >= args.minutes:
        print(f"dlcp-emu bench soak: --warmup-minutes ({args.warmup_minutes:g}) must be below "
              f"--minutes ({args.minutes:g})", file=sys.stderr)
        return 2
    if args.preset is not None and args.preset not in preset_names():
        print(f"dlcp-emu bench soak: unknown preset {args.preset!r}; known: "
              f"{', '.join(preset_names())}", file=sys.stderr)
        return 2
    try:
        result = bench_soak.run(args.minutes, spec_path=args.spec, preset=args.preset,
                                sample_s=args.sample_seconds, warmup_min=args.warmup_minutes,
                                out_dir=args.results,
                                log=(lambda m: print(m, file=sys.stderr, flush=True))
                                if args.json else print)
    except SpecError as e:
        print(f"dlcp-emu bench soak: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result))
    else:
        print("\n".join(bench_soak.report(result)))
    return 0 if result["memory_ok"] and result["links_ok"] else 1


def _add_transport(kinds):
    t = kinds.add_parser("transport", help="one sender and receiver moving one large message: "
                                           "packets per second of the native and Python endpoints")
    t.add_argument("--transport", choices=("dlcp", "reliable"), default="dlcp", help="default dlcp")
    t.add_argument("--mbytes", type=number_at_least(0, lo_open=True), default=100.0,
                   help="the message's size in MB (default 100; smaller for a quick run)")
    t.add_argument("--loss", type=open_fraction, default=0.01,
                   help="loss of the lossy link, each way (default 0.01)")
    t.add_argument("--mtu", type=positive_int, default=1500, help="IP MTU (default 1500)")
    t.add_argument("--seed", type=number_at_least(0, kind=int), default=1, help="default 1")
    t.add_argument("--repeat", type=positive_int, default=3, help="runs of each; the fastest counts (default 3)")
    t.add_argument("--json", action="store_true", help="print one JSON object")
    t.set_defaults(func=_bench_transport)
    return t


def _bench_transport(args):
    from dlcp_emu.tools import bench_transport
    from dlcp_emu.transport import transport_payload_size
    try:
        transport_payload_size(args.mtu)
    except ValueError as e:
        print(f"dlcp-emu bench transport: --mtu: {e}", file=sys.stderr)
        return 2
    log = (lambda m: print(m, file=sys.stderr, flush=True)) if not args.json else None
    result = bench_transport.run(args.transport, mbytes=args.mbytes, loss=args.loss, mtu=args.mtu,
                                 seed=args.seed, repeat=args.repeat, log=log)
    if args.json:
        print(json.dumps(result))
        return 0 if result["identical"] else 1
    print(f"{args.transport}: one message of {result['bytes']:,} bytes, MTU {args.mtu}, "
          f"{result['delay_ns'] // 1000} us each way (fastest of {args.repeat})")
    for link in result["links"]:
        print(f"  {link['link']}:")
        for way, r in link["ways"].items():
            ratio = link.get(f"{way}_ratio")
            print(f"    {way:<20} {r['pps']:>11,} packets/s ({r['packets']:,} packets in {r['seconds']:.3f} s"
                  f"{f'; {ratio}x python' if ratio else ''}; runs {', '.join(f'{p:,}' for p in r['runs_pps'])})")
        r = link["ways"]["python"]
        print(f"    ended at {r['end_ns'] / 1e6:.3f} ms virtual; {r['lost_packets']:,} packets lost, "
              f"{r['retransmissions']:,} resent, {r['lost_bytes']:,} bytes zero-filled; "
              f"every way identical: {link['identical']}")
    return 0 if result["identical"] else 1
