"""The raw socket that the traffic generator (trafficgen.py) sends on and its receiver
(trafficsink.py) reads from: AF_PACKET on one interface, large buffers, optionally a socket
filter that lets only sampled frames through, and the timer slack both processes set."""
import ctypes
import socket
import struct

from dlcp_emu.emu.datapath.sockets import (
    ETH_P_ALL,
    PACKET_IGNORE_OUTGOING,
    PR_SET_TIMERSLACK,
    SO_RCVBUFFORCE,
    SO_SNDBUFFORCE,
    SOL_PACKET,
    _prctl,
)
from dlcp_emu.wire.layout import DLCP_UDP_PORT, ETHERTYPE_IPV4, OFF_ETHERTYPE, OFF_JOB, OFF_UDP_DPORT

SO_ATTACH_FILTER = 26


def set_slack():
    _prctl(PR_SET_TIMERSLACK, 1)   # wake on time: the send schedule is in microseconds


def open_socket(intf, rcvbuf=4 << 20, filt=None):
    """A raw socket bound to `intf` (our own transmissions ignored); filt: a `job_filter`."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    for opt in (SO_RCVBUFFORCE, SO_SNDBUFFORCE):
        try:
            s.setsockopt(socket.SOL_SOCKET, opt, rcvbuf)
        except OSError:
            pass
    if filt is not None:
        prog, _keep = filt
        s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, prog)
    s.bind((intf, ETH_P_ALL))
    return s


def job_filter(job):
    """Classic BPF: accept IPv4 UDP to the DLCP port whose DLCP job field equals `job`.
    Returns (the sock_fprog, the buffer it points to: keep it alive while the socket is)."""
    ins = [
        (0x28, 0, 0, OFF_ETHERTYPE), (0x15, 0, 5, ETHERTYPE_IPV4),   # ldh [12]; jeq IPv4
        (0x28, 0, 0, OFF_UDP_DPORT), (0x15, 0, 3, DLCP_UDP_PORT),    # ldh [36]; jeq dport
        (0x28, 0, 0, OFF_JOB), (0x15, 0, 1, job),                    # ldh [50]; jeq job
        (0x06, 0, 0, 0xFFFF), (0x06, 0, 0, 0),                       # accept / reject
    ]
    raw = b"".join(struct.pack("HBBI", *i) for i in ins)
    buf = ctypes.create_string_buffer(raw)
    prog = struct.pack("HL", len(ins), ctypes.addressof(buf))
    return prog, buf
