"""Per-port captures in pcap format with nanosecond times (what tcpdump and Wireshark read)."""
import struct
import time


PCAP_NSEC_MAGIC = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
_PCAP_HEADER = struct.Struct("<IHHiIII")
_PCAP_RECORD = struct.Struct("<IIII")


class PcapWriter:
    """libpcap with nanosecond timestamps, written with struct (scapy is far too slow per
    packet); readable by tcpdump -r and scapy's rdpcap."""

    def __init__(self, path, snaplen=65535):
        self.path = path
        self.f = open(path, "wb", buffering=1 << 20)
        self.f.write(_PCAP_HEADER.pack(PCAP_NSEC_MAGIC, 2, 4, 0, 0, snaplen, LINKTYPE_ETHERNET))
        self.pack = _PCAP_RECORD.pack
        self.write_ = self.f.write
        self.packets = 0

    def write(self, frame, t_ns=None):
        if t_ns is None:
            t_ns = time.time_ns()
        n = len(frame)
        self.write_(self.pack(t_ns // 1_000_000_000, t_ns % 1_000_000_000, n, n))
        self.write_(frame)
        self.packets += 1

    def flush(self):
        self.f.flush()

    def close(self):
        self.f.close()
