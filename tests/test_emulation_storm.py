"""A storm of hostile frames from one host (root): valid DLCP among truncated and corrupted
DLCP headers, broken IPv4, unknown EtherTypes, broadcasts, VLAN-tagged frames, 802.1Q headers
cut short and random bytes, sent with scapy from h1 of a leaf-spine. Every switch stays up and
stops cleanly, ping still works, every frame is forwarded, dropped with a reason or delivered
(the ledger balances, and names the reasons), and a tagged frame arrives as it was sent."""
import random
import sys

import pytest
# Not scapy.all: its every layer would take UDP ports (Kerberos's 464) from the DLCP layer
# in the tests collected with this one.
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw
from scapy.utils import rdpcap, wrpcap

from dlcp_emu.wire import DlcpHeader, Flags, Frame, encode_frame
from dlcp_emu.wire.layout import DLCP_OFF, DLCP_UDP_PORT
from test_emulation_switch import ROOT, emulate, wait_for
from topologies import build

pytestmark = [pytest.mark.root, pytest.mark.slow]

EACH = 300           # frames of each kind
VLAN = 42


def storm(t, src, dst, seed=1):
    """{kind: [frame bytes]} from host src, mostly to host dst."""
    smac, dmac, sip, dip = t.host_mac(src), t.host_mac(dst), t.host_ip(src), t.host_ip(dst)
    rng = random.Random(seed)

    def dlcp(payload=64):
        h = DlcpHeader(flags=Flags(0), priority=rng.randrange(8), mag_class=rng.randrange(8),
                       payload_len=payload)
        return encode_frame(Frame(src_mac=smac, dst_mac=dmac, src_ip=sip, dst_ip=dip,
                                  sport=DLCP_UDP_PORT, header=h, payload=bytes(payload)))

    def udp(dport, payload):
        return Ether(src=smac, dst=dmac) / IP(src=sip, dst=dip) / UDP(sport=DLCP_UDP_PORT, dport=dport) / Raw(payload)

    def corrupted():
        """A field the codec refuses: version, an unknown flag, priority, magnitude class,
        traffic class (the switch checks no UDP checksum)."""
        f = bytearray(dlcp())
        off, value = rng.choice([(2, 9), (4, 0x80), (5, 8), (6, 9), (7, 9)])
        f[DLCP_OFF + off] = value
        return bytes(f)

    def random_frame():
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(14, 200)))

    return {
        "dlcp": [dlcp() for _ in range(EACH)],
        # The magic, then the header cut short (IPv4 and UDP lengths say so): invalid_dlcp.
        "dlcp_truncated": [bytes(udp(DLCP_UDP_PORT, dlcp()[DLCP_OFF:DLCP_OFF + rng.randint(2, 40)]))
                           for _ in range(EACH)],
        "dlcp_corrupted": [corrupted() for _ in range(EACH)],
        # IPv4 whose total length runs past the frame, or whose header is under 20 bytes.
        "bad_ipv4": [bytes(Ether(src=smac, dst=dmac, type=0x0800) / Raw(bytes([rng.choice((0x45, 0x43)), 0, 0xFF, 0xFF]) + bytes(42)))
                     for _ in range(EACH)],
        "unknown_ethertype": [bytes(Ether(src=smac, dst=dmac, type=0x88B5) / Raw(bytes(50))) for _ in range(EACH)],
        "broadcast": [bytes(Ether(src=smac, dst="ff:ff:ff:ff:ff:ff", type=0x88B6) / Raw(bytes(40))) for _ in range(EACH)],
        "vlan": [bytes(Ether(src=smac, dst=dmac) / Dot1Q(vlan=VLAN, prio=3) / IP(src=sip, dst=dip)
                       / UDP(sport=1, dport=9) / Raw(bytes([i % 256]) * 40)) for i in range(EACH)],
        "vlan_cut_short": [bytes(Ether(src=smac, dst=dmac, type=0x8100)) for _ in range(EACH)],
        "random": [random_frame() for _ in range(EACH)],
    }


def test_a_storm_of_hostile_frames_leaves_every_switch_up_and_every_frame_accounted(tmp_path):
    t = build("leaf-spine", leaves=2, spines=2, hosts_per_leaf=2, host_rate_bps=100e6)
    kinds = storm(t, "h1", "h4")
    frames = [f for i in range(EACH) for fs in kinds.values() for f in fs[i:i + 1]]   # interleaved
    assert len(kinds["vlan"][0]) == 86 and len(kinds["vlan_cut_short"][0]) == 14
    wrpcap(str(tmp_path / "storm.pcap"), [Raw(f) for f in frames])
    seen = tmp_path / "h4-vlan.pcap"
    with emulate(tmp_path, t, "dlcp") as run:
        h1, h4 = run.host("h1"), run.host("h4")
        dump = run.popen("h4", ["timeout", "60", "tcpdump", "-nn", "-U", "-c", str(EACH), "-i", "h4-eth0",
                                "-w", str(seen), "vlan", str(VLAN)])
        wait_for(lambda: seen.exists() and seen.stat().st_size >= 24, 10, "tcpdump on h4")
        sender = run.popen("h1", [sys.executable, "-c", "import sys; from scapy.all import rdpcap, sendp; "
                                  "sendp(rdpcap(sys.argv[1]), iface='h1-eth0', verbose=0)",
                                  str(tmp_path / "storm.pcap")], cwd=ROOT)
        _, err = sender.communicate(timeout=120)
        assert sender.returncode == 0, err.decode()
        _, err = dump.communicate(timeout=70)
        assert dump.returncode == 0, err.decode()          # every tagged frame reached h4
        assert " 3 received" in h1.cmd(f"ping -c 3 -i 0.2 -W 2 {h4.IP()}")
        assert run.switch_exits() == {}                    # every switch is up
    # A tagged frame leaves the network as it came in: tag and all.
    # (sorted: the preset sprays packets over both spines)
    assert sorted(bytes(p) for p in rdpcap(str(seen))) == sorted(kinds["vlan"])
    stats = run.stats
    assert {n: (st["returncode"], st["stop"]) for n, st in stats.items()} == \
        {n: (0, "clean") for n in t.switches()}
    assert all(st["conservation"]["ok"] for st in stats.values())
    dropped = {}
    for st in stats.values():
        for reason, k in st["conservation"]["dropped"].items():
            dropped[reason] = dropped.get(reason, 0) + k
    # The refused kinds by their reasons (random bytes may add a few of either).
    assert 2 * EACH <= dropped["invalid_dlcp"] <= 2 * EACH + EACH // 10, dropped
    assert EACH <= dropped["malformed"] <= EACH + EACH // 10, dropped
    assert dropped["no_route"] > 0 and dropped["off_flood_tree"] > 0, dropped   # random MACs, broadcasts
    # `emulate` asserted that every link balances; what went where:
    checked = run.links
    assert checked["lost"] == {"kernel_discarded": EACH}, checked["lost"]
    assert next(r for r in checked["links"] if r["link"] == "h1:0->l1:1")["lost"] == {"kernel_discarded": EACH}
    # Broadcasts were delivered, and discarded by the hosts' kernels (h4's, with tcpdump on,
    # keeps them, and the unknown EtherType's).
    assert checked["host_discarded"] >= 2 * EACH, checked
