"""A small DLCP traffic generator and receiver for tests and benchmarks (raw AF_PACKET).

    python -m dlcp_emu.emu.trafficgen send --intf h1-eth0 --src-mac .. --dst-mac .. --src-ip ..
        --dst-ip .. --rate-pps 20000 --duration 2 --class 0:7:0:1000:1 --class 7:0:1:1000:3
    python -m dlcp_emu.emu.trafficgen recv --intf h3-eth0 --duration 4 --idle 0.5

Run each in a host's namespace (Mininet `host.popen`). Frames are built once with
`wire.encode_frame`; per packet the sender only stamps the sequence number (chunk_index) and
CLOCK_MONOTONIC send time (send_ts_ns) into a template, with the UDP checksum left at 0 (none)
so the stamp needs no checksum update. Both namespaces share CLOCK_MONOTONIC, so the receiver
gets one-way delay as its receive time minus send_ts_ns.

A class is PRIO:MAG:DROPPABLE:PAYLOAD:WEIGHT; classes are interleaved by weight, flows (UDP
source ports) round robin. `--sample-every K` marks every K-th frame with job 1; a receiver
with `--job 1` gets only those through a socket filter (so it keeps up at high rates);
`--probe-dst-mac/--probe-dst-ip` send those to another host, so that no filter runs on the
frames of the load.
"""
import argparse
import json
import os
import select
import struct
import sys
import time

from dlcp_emu.wire import DLCP_UDP_PORT, DlcpHeader, Flags, Frame, encode_frame
from dlcp_emu.wire.layout import (
    L234_STRUCT,
    OFF_CHUNK_INDEX,
    OFF_JOB,
    OFF_SEND_TS_NS,
    OFF_UDP_CHECKSUM,
)

from dlcp_emu.emu.lifeline import follow_parent_from_env
from dlcp_emu.emu.traffic_socket import open_socket, set_slack

_U32 = struct.Struct("!I")
_U64 = struct.Struct("!Q")


def parse_class(text):
    try:
        prio, mag, drop, payload, weight = (int(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"class must be PRIO:MAG:DROPPABLE:PAYLOAD:WEIGHT (integers), got {text!r}") from None
    if not (0 <= prio <= 7 and 0 <= mag <= 7 and drop in (0, 1) and 0 <= payload <= 9000
            and weight >= 1):
        raise argparse.ArgumentTypeError(f"class out of range: {text!r}")
    return {"prio": prio, "mag": mag, "droppable": bool(drop), "payload": payload,
            "weight": weight}


def build_templates(src_mac, dst_mac, src_ip, dst_ip, classes, flows=1, sport_base=10000,
                    dport=DLCP_UDP_PORT, job=0, ecn=0):
    """[class][flow] -> bytearray frame with UDP checksum 0 (so stamps need no update)."""
    out = []
    for c in classes:
        row = []
        for f in range(flows):
            h = DlcpHeader(flags=Flags.DROPPABLE if c["droppable"] else Flags(0),
                           priority=c["prio"], mag_class=c["mag"], job=job,
                           payload_len=c["payload"], tensor_id=c.get("layer", 0))
            fr = Frame(src_mac=src_mac, dst_mac=dst_mac, src_ip=src_ip, dst_ip=dst_ip,
                       sport=sport_base + f, dport=dport, ecn=ecn, header=h,
                       payload=bytes(c["payload"]))
            buf = bytearray(encode_frame(fr))
            buf[OFF_UDP_CHECKSUM:OFF_UDP_CHECKSUM + 2] = b"\x00\x00"
            row.append(buf)
        out.append(row)
    return out


def udp_template(src_mac, dst_mac, src_ip, dst_ip, size, sport=10000, dport=DLCP_UDP_PORT + 1):
    """A plain (non-DLCP) IPv4/UDP frame of `size` bytes (>= 42; 60 is the 64-byte minimum
    Ethernet frame without FCS), UDP checksum 0."""
    from dlcp_emu.wire.frame import _ip_bytes, _mac_bytes, internet_checksum
    size = max(size, 42)
    buf = bytearray(size)
    ip_len = size - 14
    L234_STRUCT.pack_into(buf, 0, _mac_bytes(dst_mac, "dst_mac"),
                          _mac_bytes(src_mac, "src_mac"), 0x0800, 0x45, 0, ip_len, 0, 0x4000, 64, 17,
                          0, _ip_bytes(src_ip, "src_ip"), _ip_bytes(dst_ip, "dst_ip"), sport, dport,
                          ip_len - 20, 0)
    struct.pack_into("!H", buf, 24, internet_checksum(buf[14:34]))
    return buf


def schedule(classes, flows):
    """Frame order: classes interleaved by weight (smooth), flows round robin."""
    total = sum(c["weight"] for c in classes)
    credit = [0.0] * len(classes)
    order = []
    for _ in range(total):
        for i, c in enumerate(classes):
            credit[i] += c["weight"] / total
        i = max(range(len(classes)), key=lambda k: credit[k])
        credit[i] -= 1
        order.append(i)
    seq = []
    n = len(order) * flows
    for k in range(n):
        seq.append((order[k % len(order)], k % flows))
    return seq


def sampled(frames):
    """Copies of the frames with job 1: what `--sample-every` sends every K-th."""
    out = [bytearray(t) for t in frames]
    for t in out:
        struct.pack_into("!H", t, OFF_JOB, 1)
    return out


def send(intf, templates, seq, rate_pps, duration_s, count=None, burst=32, sample_every=0,
         cpu=None, engine="native", probe_templates=None):
    """Send frames at rate_pps (bursts of at most `burst` when behind) for duration_s or
    count frames. Returns a summary dict. engine: the compiled sender (`send_native`, the
    benchmarks' default: no figure bound by Python) or this loop. probe_templates: what the
    sampled frames are made of (templates to another destination, `--probe-dst-mac`);
    default the frames themselves."""
    set_slack()
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    probes = [(probe_templates or templates)[c][f] for c, f in seq]
    if engine == "native":
        return send_native(intf, templates, seq, rate_pps, duration_s, count, burst, sample_every, probes)
    sock = open_socket(intf)
    tx = sock.send
    clock = time.monotonic_ns
    pack_ts = _U64.pack_into
    pack_seq = _U32.pack_into
    frames = [templates[c][f] for c, f in seq]
    samples = sampled(probes) if sample_every else None
    L = len(frames)
    stamp = all(len(f) >= 90 for f in frames)
    per_class = [0] * len(templates)
    cls_of = [c for c, _ in seq]
    limit = count if count is not None else 1 << 62
    dur_ns = int(duration_s * 1e9)
    gap = 1e9 / rate_pps
    errors = 0
    sent = 0
    t0 = clock()
    end = t0 + dur_ns
    while sent < limit:
        now = clock()
        if now >= end:
            break
        due = int((now - t0) / gap) + 1 - sent
        if due <= 0:
            wait = (t0 + sent * gap - now) / 1e9
            if wait > 0:
                select.select((), (), (), wait)
            continue
        if due > burst:
            due = burst
        if due > limit - sent:
            due = limit - sent
        for _ in range(due):
            i = sent % L
            if samples is not None and sent % sample_every == 0:
                buf = samples[i]
            else:
                buf = frames[i]
            if stamp:
                pack_seq(buf, OFF_CHUNK_INDEX, sent & 0xFFFFFFFF)
                pack_ts(buf, OFF_SEND_TS_NS, clock())
            try:
                tx(buf)
            except OSError:
                errors += 1
                continue
            per_class[cls_of[i]] += 1
            sent += 1
    elapsed = (clock() - t0) / 1e9
    sock.close()
    return {"sent": sent, "errors": errors, "elapsed_s": round(elapsed, 6),
            "pps": round(sent / elapsed) if elapsed > 0 else 0, "per_class": per_class}


def send_native(intf, templates, seq, rate_pps, duration_s, count, burst, sample_every, probes):
    """`send` with the loop compiled (dlcp_native/src/host/traffic.cpp): the same frames, stamps,
    bursts and summary."""
    from dlcp_native.host import send_frames
    frames = [bytes(templates[c][f]) for c, f in seq]
    samples = [bytes(b) for b in sampled(probes)] if sample_every else []
    sock = open_socket(intf)
    try:
        sent, errors, elapsed_ns, per_class = send_frames(
            sock.fileno(), frames, samples, [c for c, _ in seq], len(templates), float(rate_pps),
            int(duration_s * 1e9), count if count is not None else 1 << 62, int(burst),
            all(len(f) >= 90 for f in frames), int(sample_every))
    finally:
        sock.close()
    elapsed = elapsed_ns / 1e9
    return {"sent": sent, "errors": errors, "elapsed_s": round(elapsed, 6),
            "pps": round(sent / elapsed) if elapsed > 0 else 0, "per_class": per_class}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m dlcp_emu.emu.trafficgen")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("--intf", required=True)
    s.add_argument("--src-mac", required=True)
    s.add_argument("--dst-mac", required=True)
    s.add_argument("--src-ip", required=True)
    s.add_argument("--dst-ip", required=True)
    s.add_argument("--class", dest="classes", action="append", type=parse_class,
                   help="PRIO:MAG:DROPPABLE:PAYLOAD:WEIGHT (repeatable)")
    s.add_argument("--flows", type=int, default=1)
    s.add_argument("--udp-size", type=int, default=None,
                   help="send plain UDP frames of this many bytes instead of DLCP (no stamps)")
    s.add_argument("--sport-base", type=int, default=10000)
    s.add_argument("--rate-pps", type=float, required=True)
    s.add_argument("--duration", type=float, default=1.0)
    s.add_argument("--count", type=int, default=None)
    s.add_argument("--burst", type=int, default=32)
    s.add_argument("--sample-every", type=int, default=0)
    s.add_argument("--probe-dst-mac", default=None,
                   help="send the sampled frames (--sample-every) to this MAC instead ...")
    s.add_argument("--probe-dst-ip", default=None, help="... and this IPv4 address")
    s.add_argument("--ecn", type=int, default=0, choices=(0, 1, 2, 3))
    s.add_argument("--cpu", type=int, default=None)
    s.add_argument("--engine", choices=("native", "python"), default="native",
                   help="the compiled sender (default) or the Python loop")
    s.add_argument("--start-at", type=float, default=None,
                   help="CLOCK_MONOTONIC second to start at (to line up several senders)")
    r = sub.add_parser("recv")
    r.add_argument("--intf", required=True)
    r.add_argument("--duration", type=float, default=5.0)
    r.add_argument("--idle", type=float, default=0.5)
    r.add_argument("--expect", type=int, default=None)
    r.add_argument("--job", type=int, default=None)
    r.add_argument("--ready", default=None, help="file to create once listening")
    args = ap.parse_args(argv)
    follow_parent_from_env("trafficgen")
    if args.cmd == "send":
        classes = args.classes or [parse_class("7:0:0:18:1")]
        if args.udp_size is not None:
            classes = [{"udp_size": args.udp_size}]
            tpl = [[udp_template(args.src_mac, args.dst_mac, args.src_ip, args.dst_ip,
                                 args.udp_size, sport=args.sport_base + f)
                    for f in range(args.flows)]]
            seq = [(0, f) for f in range(args.flows)]
        else:
            tpl = build_templates(args.src_mac, args.dst_mac, args.src_ip, args.dst_ip, classes,
                                  flows=args.flows, sport_base=args.sport_base, ecn=args.ecn)
            seq = schedule(classes, args.flows)
        probe_tpl = None
        if (args.probe_dst_mac is None) != (args.probe_dst_ip is None):
            ap.error("--probe-dst-mac and --probe-dst-ip: give both or neither")
        if args.probe_dst_mac is not None:
            if not args.sample_every or args.udp_size is not None:
                ap.error("--probe-dst-mac: the probes are the sampled DLCP frames: needs --sample-every, "
                         "not --udp-size")
            probe_tpl = build_templates(args.src_mac, args.probe_dst_mac, args.src_ip, args.probe_dst_ip,
                                        classes, flows=args.flows, sport_base=args.sport_base, ecn=args.ecn)
        if args.start_at is not None:
            wait = args.start_at - time.monotonic()
            if 0 < wait < 30:
                time.sleep(wait)
        out = send(args.intf, tpl, seq, args.rate_pps, args.duration, args.count, args.burst,
                   args.sample_every, args.cpu, args.engine, probe_tpl)
        out["classes"] = classes
    else:
        from dlcp_emu.emu.trafficsink import receive
        out = receive(args.intf, args.duration, args.idle, args.expect, args.job, args.ready)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
