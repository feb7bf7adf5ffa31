"""The data path on real AF_PACKET sockets and receive rings over veth pairs (root, no
Mininet): a frame larger than a ring slot is cut by the kernel, and counted in and dropped
as rx_truncated, not lost unseen."""
import socket
import struct
import subprocess
import threading

import pytest

from dlcp_emu.emu.datapath.config import SwitchProcessConfig
from dlcp_emu.emu.datapath.process import Datapath
from dlcp_emu.emu.datapath.sockets import open_port_socket
from dlcp_emu.wire import DlcpHeader, Flags, Frame, encode_frame

pytestmark = [pytest.mark.root]

H1, H2 = "00:00:00:00:00:01", "00:00:00:00:00:02"
PAIRS = (("dlcpt-a", "dlcpt-b"), ("dlcpt-c", "dlcpt-d"))   # switch end, far end


def frame(payload):
    h = DlcpHeader(flags=Flags(0), priority=7, mag_class=0, payload_len=payload)
    return encode_frame(Frame(src_mac=H1, dst_mac=H2, src_ip="10.0.0.1", dst_ip="10.0.0.2",
                              sport=9796, header=h, payload=bytes(payload)))


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def veths():
    try:
        for a, b in PAIRS:
            ip("link", "add", a, "mtu", "4000", "type", "veth", "peer", "name", b, "mtu", "4000")
            for n in (a, b):
                ip("link", "set", n, "up")
                with open(f"/proc/sys/net/ipv6/conf/{n}/disable_ipv6", "w") as f:
                    f.write("1")
        yield PAIRS
    finally:
        for a, _ in PAIRS:
            subprocess.run(["ip", "link", "del", a], capture_output=True)


def test_a_frame_larger_than_a_ring_slot_is_counted_as_truncated(veths, tmp_path):
    dp = Datapath(SwitchProcessConfig(name="t1", pipeline="fifo",
                                      ports=[{"number": n, "intf": a, "rate_bps": 1e9}
                                             for n, (a, _) in enumerate(veths, start=1)],
                                      routes={H2: [2]}, flood=[], stats_path=str(tmp_path / "stats.json")))
    socks = {n: open_port_socket(a) for n, (a, _) in enumerate(veths, start=1)}
    dp.attach(socks, mtu=1500)                 # ring slots of 2048 bytes: 3000 do not fit
    far_in = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    far_in.bind((veths[0][1], 0))
    far_out = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    far_out.bind((veths[1][1], 0))
    far_out.settimeout(3)
    thread = threading.Thread(target=dp.run, daemon=True)
    thread.start()
    try:
        small = frame(200)
        far_in.send(frame(3000))
        far_in.send(small)
        got = far_out.recv(65536)
        assert got == small
    finally:
        dp.request_stop()
        thread.join(5)
        stats = dp.stats(final=True)
        dp.close()
        far_in.close()
        far_out.close()
    c = stats["conservation"]
    assert stats["rx_truncated"] == {1: 1, 2: 0} and stats["rx_frames"][1] == 2
    assert c["dropped"] == {"rx_truncated": 1} and c["sent"] == 1 and c["frames_in"] == 2
    assert c["ok"], c


PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 0x10
TAG_42 = struct.pack("!HH", 0x8100, 3 << 13 | 42)     # 802.1Q, priority 3, VLAN 42


def recv_as_on_the_wire(sock):
    """A frame as it was on the wire: the kernel hands a VLAN tag beside the frame
    (PACKET_AUXDATA), not in it."""
    data, anc, _, _ = sock.recvmsg(65536, socket.CMSG_SPACE(20))
    for level, kind, aux in anc:
        if level == 263 and kind == PACKET_AUXDATA:
            status, _, _, _, _, tci, tpid = struct.unpack("IIIHHHH", aux[:20])
            if status & TP_STATUS_VLAN_VALID:
                return data[:12] + struct.pack("!HH", tpid or 0x8100, tci) + data[12:]
    return data


@pytest.mark.parametrize("mode,engine", [("model", "python"), ("model", "native"),
                                         ("forward", "python"), ("forward", "native")])
def test_a_vlan_tag_is_carried_through_and_a_frame_too_short_for_one_is_counted(veths, tmp_path,
                                                                                 mode, engine):
    """The kernel takes a frame's VLAN tag out before the switch's socket sees it: the ring's
    reader puts it back, so the frame leaves as it came (Python's ring and the compiled one).
    An 802.1Q frame of 14 bytes, too short for its tag, the kernel frees before any socket:
    the switch counts it, by its port's receive count, as discarded by the kernel."""
    dp = Datapath(SwitchProcessConfig(name="t1", pipeline="fifo", mode=mode, engine=engine,
                                      ports=[{"number": n, "intf": a, "rate_bps": 1e9}
                                             for n, (a, _) in enumerate(veths, start=1)],
                                      routes={H2: [2]}, flood=[], stats_path=str(tmp_path / "stats.json")))
    socks = {n: open_port_socket(a) for n, (a, _) in enumerate(veths, start=1)}
    dp.attach(socks, mtu=1500)
    far_in = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    far_in.bind((veths[0][1], 0))
    far_out = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    far_out.bind((veths[1][1], 0))
    far_out.setsockopt(263, PACKET_AUXDATA, 1)
    far_out.settimeout(3)
    thread = threading.Thread(target=dp.run, daemon=True)
    thread.start()
    try:
        plain = frame(200)
        vlan = plain[:12] + TAG_42 + plain[12:]
        far_in.send(plain[:12] + b"\x81\x00")          # 14 bytes: an 802.1Q header cut short
        far_in.send(vlan)
        far_in.send(plain)
        got = [recv_as_on_the_wire(far_out) for _ in range(2)]
    finally:
        dp.request_stop()
        thread.join(5)
        dp.count_kernel()
        stats = dp.stats(final=True)
        dp.close()
        far_in.close()
        far_out.close()
    assert got == [vlan, plain]
    assert stats["rx_kernel_discarded"] == {1: 1, 2: 0} and stats["rx_frames"][1] == 2
    assert stats["rx_rings"][1]["vlan_tagged"] == 1


def test_a_switch_told_to_stop_again_while_it_exits_still_exits_cleanly(veths, tmp_path):
    """A runner may send SIGTERM more than once (its stop, then Mininet's). Once the final
    stats are written, further signals must not end the process by their default action
    (which Python restores as it exits): exit status 0, not -15, with the stats final."""
    import json
    import os
    import signal
    import sys
    import time
    SwitchProcessConfig(name="t1", pipeline="fifo",
                        ports=[{"number": n, "intf": a, "rate_bps": 1e9} for n, (a, _) in enumerate(veths, start=1)],
                        routes={H2: [2]}, flood=[], stats_path=str(tmp_path / "stats.json"),
                        ready_path=str(tmp_path / "ready")).write(tmp_path / "cfg.json")
    p = subprocess.Popen([sys.executable, "-m", "dlcp_emu.emu.datapath", "--config", str(tmp_path / "cfg.json")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while not (tmp_path / "ready").exists():
            assert p.poll() is None and time.monotonic() < deadline, p.stderr.read().decode()
            time.sleep(0.01)
        while p.poll() is None and time.monotonic() < deadline:   # stop, and again, until it is gone
            try:
                os.kill(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                break
            time.sleep(0.0005)
        assert p.wait(timeout=10) == 0, p.stderr.read().decode()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert json.loads((tmp_path / "stats.json").read_text())["final"]
