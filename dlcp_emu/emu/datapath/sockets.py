"""AF_PACKET sockets on the switch ports: opening them, the TPACKET_V2 receive ring whose
frames carry the kernel's delivery time (and their VLAN tag, which the kernel takes out of the
frame before any socket sees it), the kernel's counters, and the prctl calls the process
makes."""
import socket
import struct

from dlcp_emu.emu.lifeline import PR_SET_TIMERSLACK, prctl as _prctl  # noqa: F401 (re-exported)


ETH_P_ALL = 3
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_STATISTICS = 6
PACKET_IGNORE_OUTGOING = 23
SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33
SOCKET_BUFFER = 4 << 20


def open_port_socket(intf):
    """A non-blocking AF_PACKET socket on one interface: all protocols, promiscuous, our own
    transmissions ignored, large buffers so bursts wait in the kernel rather than drop."""
    # Protocol 0 until bound: an ETH_P_ALL socket would see every interface's frames first.
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
            try:
                s.setsockopt(socket.SOL_SOCKET, force, SOCKET_BUFFER)
            except OSError:          # not CAP_NET_ADMIN: capped at net.core.*mem_max
                s.setsockopt(socket.SOL_SOCKET, plain, SOCKET_BUFFER)
        s.bind((intf, ETH_P_ALL))
        ifindex = socket.if_nametoindex(intf)
        s.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP,
                     struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b""))
        s.setblocking(False)
    except OSError as e:
        s.close()
        raise OSError(e.errno, f"cannot open AF_PACKET socket on {intf}: {e.strerror}") from None
    return s


PACKET_RX_RING = 5
PACKET_VERSION = 10
TPACKET_V2 = 1
TP_STATUS_USER = 1
TP_STATUS_VLAN_VALID = 0x10        # the frame came with a VLAN tag: tp_vlan_tci holds it
TP_STATUS_VLAN_TPID_VALID = 0x40   # and tp_vlan_tpid its EtherType (0x8100, 0x88a8)
ETH_P_8021Q = 0x8100
MAC_PAIR = 12                      # the tag goes after the destination and source MACs


# struct tpacket2_hdr: tp_status, tp_len, tp_snaplen, tp_mac, tp_net, tp_sec, tp_nsec,
# tp_vlan_tci, tp_vlan_tpid. tp_sec/tp_nsec: when the kernel delivered the frame
# (CLOCK_REALTIME).
_TP2_HDR = struct.Struct("=IIIHHIIHH")
_ZERO32 = struct.Struct("=I")
_TAG = struct.Struct("!HH")


def tagged(frame, tci, tpid=ETH_P_8021Q):
    """The frame as it was on the wire: its VLAN tag (which the kernel moved out of the frame
    into the ring's header) back after the MACs."""
    return frame[:MAC_PAIR] + _TAG.pack(tpid, tci) + frame[MAC_PAIR:]


class RxRing:
    """PACKET_RX_RING (TPACKET_V2) on a port socket: the kernel writes frames into a shared
    ring in the sender's context and we read them without a syscall per frame (recv costs
    about a microsecond a frame here, most of it the syscall). `drain(n)` returns up to n
    frames as bytes and hands their slots back."""

    def __init__(self, sock, frame_size=2048, block_size=1 << 16, block_nr=128):
        import mmap
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        sock.setsockopt(SOL_PACKET, PACKET_RX_RING,
                        struct.pack("IIII", block_size, block_nr, frame_size,
                                    block_size // frame_size * block_nr))
        self.frame_size = frame_size
        self.frames = block_size // frame_size * block_nr
        self.mm = mmap.mmap(sock.fileno(), block_size * block_nr, mmap.MAP_SHARED,
                            mmap.PROT_READ | mmap.PROT_WRITE)
        self.i = 0
        self.truncated = 0
        self.resyncs = 0
        self.vlan_tagged = 0          # frames whose tag was put back

    def drain(self, n):
        mm = self.mm
        fs = self.frame_size
        total = self.frames
        unpack = _TP2_HDR.unpack_from
        clear = _ZERO32.pack_into
        i = self.i
        out = []
        append = out.append
        stamps = []
        stamp = stamps.append
        if not unpack(mm, i * fs)[0] & TP_STATUS_USER:
            # Called because select said frames wait, yet our next slot is empty: we lost
            # step with the kernel's head (seen after heavy overload), so find the frames.
            i = self._resync()
        while n:
            off = i * fs
            status, length, snap, mac, _net, sec, nsec, tci, tpid = unpack(mm, off)
            if not status & TP_STATUS_USER:
                break
            if snap == length:
                if status & TP_STATUS_VLAN_VALID and snap >= MAC_PAIR:
                    append(tagged(mm[off + mac:off + mac + snap], tci,
                                  tpid if status & TP_STATUS_VLAN_TPID_VALID else ETH_P_8021Q))
                    self.vlan_tagged += 1
                else:
                    append(mm[off + mac:off + mac + snap])
                stamp(sec * 1_000_000_000 + nsec)
            else:
                self.truncated += 1          # larger than a ring slot: cannot forward it
            clear(mm, off, 0)                # slot back to the kernel
            i += 1
            if i == total:
                i = 0
            n -= 1
        self.i = i
        return out, stamps

    def _resync(self):
        """Move to the first slot holding a frame after ours, wrapping (the oldest of the
        run of waiting frames); stay if none does (the kernel is still copying one in)."""
        mm, fs, total, i = self.mm, self.frame_size, self.frames, self.i
        status = _ZERO32.unpack_from
        for k in range(1, total):
            j = (i + k) % total
            if status(mm, j * fs)[0] & TP_STATUS_USER:
                self.resyncs += 1
                self.i = j
                return j
        return i

    def state(self):
        """Where we read and how many slots hold frames (a diagnostic: scans the ring)."""
        user = [k for k in range(self.frames)
                if _ZERO32.unpack_from(self.mm, k * self.frame_size)[0] & TP_STATUS_USER]
        return {"next": self.i, "slots": self.frames, "waiting": len(user),
                "first_waiting": user[0] if user else None, "truncated": self.truncated,
                "resyncs": self.resyncs, "vlan_tagged": self.vlan_tagged}

    def ready(self):
        """A frame waits in the next slot (no syscall: one read of its status word)."""
        return _ZERO32.unpack_from(self.mm, self.i * self.frame_size)[0] & TP_STATUS_USER

    def close(self):
        self.mm.close()


def socket_stats(sock):
    """(frames that reached this socket, of them dropped for want of room in its ring or
    queue) since the last call: the kernel zeroes its counts as it reports them."""
    try:
        return struct.unpack("II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    except OSError:
        return 0, 0


def socket_drops(sock):
    """Frames the kernel dropped on this socket's receive queue since the last call."""
    return socket_stats(sock)[1]


def interface_counters(intf):
    """(frames the kernel received on `intf`, frames it could not hand to the link's other
    end), from sysfs; None for an interface it does not know (a test's socketpair)."""
    base = f"/sys/class/net/{intf}/statistics/"
    try:
        with open(base + "rx_packets") as rx, open(base + "tx_dropped") as dropped:
            return int(rx.read()), int(dropped.read())
    except (OSError, ValueError):
        return None


def interface_mtu(intf):
    try:
        with open(f"/sys/class/net/{intf}/mtu") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 1500


def send_functions(socks, pcap_tx=None):
    """port -> send function; on a port with capture on (pcap_tx: port -> PcapWriter), one
    that also writes the pcap."""
    sends = {}
    for n, s in socks.items():
        if pcap_tx and n in pcap_tx:
            def send(frame, raw=s.send, cap=pcap_tx[n].write):
                cap(frame)
                return raw(frame)
            sends[n] = send
        else:
            sends[n] = s.send
    return sends


def drain_functions(socks, rings, bufsize, rx_errors, pcap_rx=None):
    """port -> drain(n): up to n received frames (a list) and the kernel's delivery time
    of each (CLOCK_REALTIME ns), from the ring if there is one; else by recv until the
    socket would block, with no times (None). With capture on, each is also written."""
    drains = {}
    for n, s in socks.items():
        ring = rings.get(n)
        if ring is not None:
            drain = ring.drain
        else:
            def drain(k, recv=s.recv, port=n):
                out = []
                append = out.append
                while k:
                    try:
                        append(recv(bufsize))
                    except BlockingIOError:
                        break
                    except OSError:
                        rx_errors[port] += 1
                        break
                    k -= 1
                return out, None
        if pcap_rx and n in pcap_rx:
            def drain(k, raw=drain, cap=pcap_rx[n].write):
                frames, stamps = raw(k)
                for f, t in zip(frames, stamps or [None] * len(frames)):
                    cap(f, t)
                return frames, stamps
        drains[n] = drain
    return drains
