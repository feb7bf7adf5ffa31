"""The transports over real UDP sockets on 127.0.0.1 (loopback only), bounded in time."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest

from udp_helpers import recv_with_tos

from dlcp_emu.transport import Message, TRANSPORTS
from dlcp_emu.transport.feedback import FB_CE, decode_ack
from dlcp_emu.emu.udp_driver import UdpDriver, run
from dlcp_emu.wire import HEADER_LEN, DlcpHeader, Ecn, PacketType


@pytest.mark.parametrize("kind", ["reliable", "dlcp"])
def test_transfer_over_loopback(sockets, kind):
    a, b = sockets
    S, R = TRANSPORTS[kind].sender, TRANSPORTS[kind].receiver
    sender, receiver = S(0, 1), R(1)
    # The receiver learns where to answer from the data's source address.
    drivers = [UdpDriver(sender, a, {1: b.getsockname()}), UdpDriver(receiver, b)]
    rng = np.random.default_rng(0)
    msgs = [Message(rng.standard_normal(n).astype(np.float32), iteration=1, tensor_id=i,
                    priority=i, src_rank=0, dst_rank=1)
            for i, n in enumerate([1_000_000, 250_000, 7])]  # ~5 MB in all
    for m in msgs:
        sender.send(m, time.monotonic_ns())
    run(drivers, lambda: sender.pending == 0 and receiver.pending == 0, timeout_s=20)
    got = {d.tensor_id: d for d in receiver.take_delivered()}
    assert sorted(got) == [0, 1, 2]
    for m in msgs:
        d = got[m.tensor_id]
        if kind == "reliable":
            assert np.array_equal(d.data, m.data)
        else:  # only the accounted (droppable) ranges may differ, and they are zero
            want = m.data.copy().view(np.uint8)
            for lo, hi in d.lost_ranges:
                want[lo:hi] = 0
            assert np.array_equal(d.data.view(np.uint8), want) and d.lost_bytes <= d.bound_bytes
    assert drivers[0].malformed == drivers[1].malformed == 0


def test_run_gives_up_at_the_deadline(sockets):
    a, b = sockets
    S = TRANSPORTS["reliable"].sender
    sender = S(0, 1)
    b.close()  # nobody listens: nothing is ever acknowledged
    sender.send(Message(np.ones(1000, np.float32), src_rank=0, dst_rank=1), time.monotonic_ns())
    t = time.monotonic()
    with pytest.raises(TimeoutError):
        run([UdpDriver(sender, a, {1: ("127.0.0.1", 9)})], lambda: sender.pending == 0, timeout_s=0.3)
    assert time.monotonic() - t < 2


def wait_for_arrival_stamps(a, b, rx, tries=100):
    """The first socket on a machine to ask for timestamps turns arrival stamping on for all,
    but the kernel does it later, from a workqueue (net_enable_timestamp); until then a
    datagram is stamped when it is read, and its wait reads as ~0 (seen on a fresh machine:
    2-30 us after a 50 ms wait). Probe until a datagram that waited 5 ms shows it."""
    for _ in range(tries):
        a.sendto(b"probe", b.getsockname())
        time.sleep(0.005)
        rx.read()                                 # not DLCP: counted malformed, its wait kept
        if rx.rx_lag_ns and rx.rx_lag_ns[-1] >= 4_000_000:
            rx.rx_lag_ns.clear()
            return
    pytest.fail("the kernel never stamped datagrams on arrival")


def test_receive_lag_is_measured_from_the_kernels_arrival_stamp(sockets):
    """Datagrams that sat in the socket are reported as having waited at least that long."""
    a, b = sockets
    S, R = TRANSPORTS["reliable"].sender, TRANSPORTS["reliable"].receiver
    sender, receiver = S(0, 1), R(1)
    tx = UdpDriver(sender, a, {1: b.getsockname()})
    rx = UdpDriver(receiver, b, measure_lag=True, ecn=True)
    wait_for_arrival_stamps(a, b, rx)
    sender.send(Message(np.ones(3000, np.float32), src_rank=0, dst_rank=1), time.monotonic_ns())
    tx.flush(time.monotonic_ns())                 # a few packets, now in b's socket buffer
    wait_s = 0.05
    time.sleep(wait_s)                            # leave them there: the lag to be measured
    rx.read()
    lags = list(rx.rx_lag_ns)
    assert len(lags) == rx.received > 0
    assert min(lags) >= wait_s * 1e9 * 0.9 and max(lags) < 5e9


def test_data_leaves_ect_feedback_does_not_and_a_ce_mark_shrinks_the_window(sockets):
    """Over real sockets, as the emulator's hosts send: the sender's data is ECT(0), the
    receiver's ACKs are Not-ECT (the rule both backends read, transport/ecn.py). A data packet
    that arrives CE (as a marking switch leaves it) is echoed, and the echo cuts the window."""
    a, b = sockets
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tap, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as wire:
        tap.bind(("127.0.0.1", 0))
        wire.bind(("127.0.0.1", 0))
        for s in (tap, wire):
            s.settimeout(2)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        S, R = TRANSPORTS["reliable"].sender, TRANSPORTS["reliable"].receiver
        sender, receiver = S(0, 1), R(1)
        tx = UdpDriver(sender, a, {1: tap.getsockname()}, ecn=True)
        rx = UdpDriver(receiver, b, ecn=True)
        sender.send(Message(np.ones(2000, np.float32), src_rank=0, dst_rank=1), time.monotonic_ns())
        tx.flush(time.monotonic_ns())
        data = [recv_with_tos(tap) for _ in range(tx.sent)]
        assert len(data) == 6 and {DlcpHeader.unpack(d).type for d, _, _ in data} == {PacketType.DATA}
        assert {ecn for _, ecn, _ in data} == {Ecn.ECT0}
        # The first data packet reaches the receiver marked CE by the "switch" (the wire
        # socket), the second unmarked.
        for (d, _, _), tos in zip(data[:2], (Ecn.CE, Ecn.ECT0)):
            wire.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
            wire.sendto(d, b.getsockname())
        deadline = time.monotonic() + 2
        while rx.received < 2 and time.monotonic() < deadline:
            rx.read()
        assert rx.received == 2
        rx.flush(time.monotonic_ns())
        acks = [recv_with_tos(wire) for _ in range(2)]
        assert {ecn for _, ecn, _ in acks} == {Ecn.NOT_ECT}
        flags = [decode_ack(ack[HEADER_LEN:])[2] & FB_CE for ack, _, _ in acks]
        assert flags == [FB_CE, 0]
        # The echo reaches the sender (from its peer's address) and cuts its window once.
        tx.peers[1] = wire.getsockname()
        cwnd = sender.cc.cwnd
        wire.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0)
        for ack, _, _ in acks:
            wire.sendto(ack, a.getsockname())
        deadline = time.monotonic() + 2
        while tx.received < 2 and time.monotonic() < deadline:
            tx.read()
        assert tx.received == 2
        assert sender.cc.reductions == 1 and sender.cc.cwnd < cwnd
