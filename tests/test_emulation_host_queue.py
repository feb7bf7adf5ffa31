"""An emulated host's queue is the simulator's NIC queue (`emu.host_egress`): under a
pipeline whose `host_queue` is `priority` (the `ndp` preset's) a host's control packets
(ACKs, probes, bitmaps, payload-free DATA) leave ahead of the data waiting in its queue; under
a `fifo` one they leave in the order handed over. Real Mininet: h1 hands 200 data packets
(1.2 ms each at 10 Mbit/s: 240 ms of backlog) and then its control packets to one socket in
a few milliseconds, and h2 reads the order they arrived in.

Two places hold a host's backlog, each tested: the kernel's queue under the pacing token
bucket (the socket takes every packet at once) and the data plane's own backlog of what a
full send buffer refused (`UdpDriver` with a send buffer of two frames)."""
import json
import os
import sys

import pytest

from topologies import build
from test_emulation_switch import emulate, wait_for

from dlcp_emu.wire import PacketType

pytestmark = [pytest.mark.root]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAFFIC = os.path.join(ROOT, "tests", "host_queue_traffic.py")
DATA = 200
CONTROLS = 4
MBPS = 1e6


def arrival_order(tmp_path, pipeline, **send):
    """[[kind, number], ...] as h2 received h1's packets, under `pipeline`."""
    t = build("star", hosts=2, host_rate_bps=10 * MBPS)
    with emulate(tmp_path, t, pipeline, static_arp=True) as run:   # no ARP queue to overflow
        ready = tmp_path / "recv.ready"
        rx = run.popen("h2", [sys.executable, TRAFFIC, "recv", "--bind", t.host_ip("h2"), "--count",
                              str(DATA + CONTROLS), "--ready", str(ready), "--timeout", "5"], cwd=ROOT)
        wait_for(lambda: ready.exists() or rx.poll() is not None, 20, "receiver ready")
        args = [f"--{k.replace('_', '-')}" if v is True else f"--{k.replace('_', '-')}={v}" for k, v in send.items()]
        tx = run.popen("h1", [sys.executable, TRAFFIC, "send", "--dst", t.host_ip("h2"), "--data", str(DATA),
                              *args], cwd=ROOT)
        _, err = tx.communicate(timeout=60)
        assert tx.returncode == 0, err.decode()
        out, err = rx.communicate(timeout=60)
        assert rx.returncode == 0, err.decode()
        drops = run.host_queue_drops()
    order = json.loads(out)
    assert len(order) == DATA + CONTROLS and drops["h1"] == 0, (len(order), drops)
    assert [n for kind, n in order if kind == "data"] == list(range(DATA)), "data reordered"
    return order


def control_positions(order):
    return [i for i, (kind, _) in enumerate(order) if kind != "data"]


@pytest.mark.parametrize("driver", [{}, {"driver": "udp_driver", "sndbuf": 4096, "control_first": True}],
                         ids=["kernel-queue", "driver-backlog"])
def test_a_priority_host_sends_its_control_packets_ahead_of_its_waiting_data(tmp_path, driver):
    """Each control packet arrives while most of the data handed over before it still waits:
    before the 100th data packet (the sender hands everything over within a few ms of the
    240 ms its link takes), where one FIFO puts it behind all 200."""
    order = arrival_order(tmp_path, "ndp", **driver)
    assert all(i < DATA // 2 for i in control_positions(order)), control_positions(order)
    # The control packets among themselves keep their order (one band, one FIFO).
    assert [n for kind, n in order if kind != "data"] == list(range(DATA, DATA + CONTROLS))


def test_a_fifo_host_sends_in_the_order_handed_over(tmp_path):
    order = arrival_order(tmp_path, "fifo")
    assert control_positions(order) == list(range(DATA, DATA + CONTROLS))



def stack_order(tmp_path, pipeline, *, native, control_first):
    """The types of the packets rank 0 (h1) sent rank 1 (h2), in the order h2 received them:
    each sends the other a message at once; rank 0's first window is its whole 300 kB message
    (~210 packets), which a send buffer of two frames keeps in its data plane's backlog, and
    the ACKs it owes rank 1 meanwhile join that backlog."""
    t = build("star", hosts=2, host_rate_bps=10 * MBPS)
    go = tmp_path / "go"
    with emulate(tmp_path, t, pipeline, static_arp=True) as run:
        procs = []
        for rank, (me, peer) in enumerate((("h1", "h2"), ("h2", "h1"))):
            ready = tmp_path / f"rank{rank}.ready"
            args = ["stack", "--rank", str(rank), "--bind", t.host_ip(me), "--peer", t.host_ip(peer),
                    "--nbytes", str(300_000 if rank == 0 else 20_000), "--ready", str(ready), "--go", str(go)]
            if rank == 0:
                args += ["--window", "1000", "--sndbuf", "4096"] + (["--native"] if native else [])
                args += ["--control-first"] if control_first else []
            procs.append(run.popen(me, [sys.executable, TRAFFIC, *args], cwd=ROOT))
            wait_for(lambda: ready.exists() or procs[-1].poll() is not None, 20, f"rank {rank} ready")
        go.touch()
        outs = [p.communicate(timeout=60) for p in procs]
        for p, (_, err) in zip(procs, outs):
            assert p.returncode == 0, err.decode()
    return json.loads(outs[1][0])


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_a_priority_hosts_data_plane_sends_the_acks_it_owes_ahead_of_its_own_backlog(tmp_path, native):
    """Rank 0's ACKs for rank 1's 14 packets reach rank 1 while most of its ~210 data
    packets still wait in its data plane: among the first half of what arrived."""
    types = stack_order(tmp_path, "ndp", native=native, control_first=True)
    acks = [i for i, t in enumerate(types) if t == PacketType.ACK]
    data = sum(t == PacketType.DATA for t in types)
    assert data >= 200 and acks, types
    assert max(acks[:10]) < data // 2, (acks, data)
