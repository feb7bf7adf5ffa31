"""Per-port captures in pcap format with nanosecond times (what tcpdump and Wireshark read),
optionally bounded on disk: a ring that keeps the newest frames."""
import os
import struct
import time


PCAP_NSEC_MAGIC = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
_PCAP_HEADER = struct.Struct("<IHHiIII")
_PCAP_RECORD = struct.Struct("<IIII")
MIN_MAX_BYTES = 64 * 1024     # the smallest bound a capture takes: room for a few full frames


class PcapWriter:
    """libpcap with nanosecond timestamps, written with struct (scapy is far too slow per
    packet); readable by tcpdump -r, tshark and scapy's rdpcap.

    max_bytes bounds the capture on disk, so that a long run cannot fill it: frames go to
    two halves in turn (`path`, then `path`.old once the first is full, as tcpdump's -C/-W
    ring does), and `close` joins the two into `path`. The capture then holds the newest
    frames, at most max_bytes; how many frames it dropped from its start is counted
    (`summary`), never lost silently."""

    def __init__(self, path, snaplen=65535, max_bytes=None):
        if max_bytes is not None and max_bytes < MIN_MAX_BYTES:
            raise ValueError(f"pcap max_bytes must be at least {MIN_MAX_BYTES}, got {max_bytes}")
        self.path = path
        self.old_path = path + ".old"
        self.snaplen = snaplen
        self.half = max_bytes // 2 if max_bytes else None
        self.packets = 0            # frames written, all told
        self.frames = 0             # in the current half
        self.size = 0               # bytes of the current half
        self.old_frames = self.old_size = 0
        self.rotated_out = 0        # frames dropped from the capture's start (the ring turned)
        self.pack = _PCAP_RECORD.pack
        self._open()

    def _open(self):
        self.f = open(self.path, "wb", buffering=1 << 20)
        self.f.write(_PCAP_HEADER.pack(PCAP_NSEC_MAGIC, 2, 4, 0, 0, self.snaplen, LINKTYPE_ETHERNET))
        self.write_ = self.f.write
        self.frames, self.size = 0, _PCAP_HEADER.size

    def write(self, frame, t_ns=None):
        if t_ns is None:
            t_ns = time.time_ns()
        n = len(frame)
        if self.half is not None and self.size + 16 + n > self.half and self.frames:
            self._turn()
        self.write_(self.pack(t_ns // 1_000_000_000, t_ns % 1_000_000_000, n, n))
        self.write_(frame)
        self.packets += 1
        self.frames += 1
        self.size += 16 + n

    def _turn(self):
        """The current half is full: it becomes the old one, the old one's frames go."""
        self.f.close()
        os.replace(self.path, self.old_path)
        self.rotated_out += self.old_frames
        self.old_frames, self.old_size = self.frames, self.size
        self._open()

    def summary(self):
        """{file, frames (written), kept (in the capture), rotated_out, bytes (on disk)}."""
        return {"file": self.path, "frames": self.packets, "kept": self.old_frames + self.frames,
                "rotated_out": self.rotated_out,
                "bytes": self.size + max(0, self.old_size - _PCAP_HEADER.size)}

    def flush(self):
        self.f.flush()

    def close(self):
        if self.f.closed:
            return
        self.f.close()
        if not self.old_frames:
            return
        # One file again, oldest frames first: the old half, then the current one's records.
        joined = self.path + ".joining"
        with open(joined, "wb") as out:
            for part, skip in ((self.old_path, 0), (self.path, _PCAP_HEADER.size)):
                with open(part, "rb") as src:
                    src.seek(skip)
                    while chunk := src.read(1 << 20):
                        out.write(chunk)
        os.replace(joined, self.path)
        os.unlink(self.old_path)


def open_captures(cfg, intf):
    """({port: writer of the frames read}, {port: writer of the frames sent}) for the
    config's `pcap_ports` (every port when null), files `<interface>-rx.pcap`/`-tx.pcap`
    in `pcap_dir`, each bounded by `pcap_max_bytes` (null: unbounded)."""
    ports = sorted(intf) if cfg.pcap_ports is None else sorted(cfg.pcap_ports)
    os.makedirs(cfg.pcap_dir, exist_ok=True)

    def writer(n, direction):
        return PcapWriter(os.path.join(cfg.pcap_dir, f"{intf[n]}-{direction}.pcap"),
                          max_bytes=cfg.pcap_max_bytes)
    return {n: writer(n, "rx") for n in ports}, {n: writer(n, "tx") for n in ports}
