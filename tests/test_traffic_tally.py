"""`traffic recv` counting (traffic.Tally, sans-I/O): a flow is a sender's address and UDP
source port, so two hosts sending from the same port are not reordered against each other."""
import struct

from dlcp_emu.emu.trafficgen import build_templates, parse_class
from dlcp_emu.emu.trafficsink import Tally
from dlcp_emu.wire import OFF_CHUNK_INDEX, OFF_SEND_TS_NS

CLASS = parse_class("0:7:0:200:1")


def frames(src_ip, seqs, sport_base=10000):
    """Frames from src_ip as `traffic send` stamps them: sequence number and send time."""
    (template,), = build_templates("00:00:00:00:00:01", "00:00:00:00:00:03", src_ip, "10.0.0.3",
                                   [CLASS], flows=1, sport_base=sport_base)
    out = []
    for seq in seqs:
        f = bytearray(template)
        struct.pack_into("!I", f, OFF_CHUNK_INDEX, seq)
        struct.pack_into("!Q", f, OFF_SEND_TS_NS, 1000 + seq)
        out.append(bytes(f))
    return out


def tally(stream):
    t = Tally()
    for i, f in enumerate(stream):
        assert t.add(f, 5000 + i)
    return t.result()


def test_two_senders_on_one_source_port_are_two_flows_in_order():
    # The second sender starts once the first has sent 1,000 frames: keyed by port alone,
    # its frames 0..998 counted as 999 reorders.
    r = tally(frames("10.0.0.1", range(1000)) + frames("10.0.0.2", range(1000)))
    assert r["received"] == 2000 and r["reordered"] == 0
    assert r["flows"] == {"10.0.0.1:10000": 1000, "10.0.0.2:10000": 1000}


def test_a_reorder_within_a_flow_is_still_counted():
    a, b = frames("10.0.0.1", [0, 2, 1, 3]), frames("10.0.0.2", [0, 1, 3, 2])
    r = tally([a[0], b[0], a[1], b[1], a[2], b[2], a[3], b[3]])
    assert r["reordered"] == 2
    # One host, two source ports: two flows as well.
    r = tally(frames("10.0.0.1", [5, 6]) + frames("10.0.0.1", [0, 1], sport_base=10001))
    assert r["reordered"] == 0 and len(r["flows"]) == 2


def test_frames_that_are_not_ours_are_counted_apart():
    t = Tally()
    (ours,) = frames("10.0.0.1", [0])
    assert not t.add(b"\x00" * 60, 1)
    assert not t.add(ours[:36] + b"\x00\x01" + ours[38:], 2)    # another UDP port
    assert t.add(ours, 3)
    r = t.result()
    assert r["other"] == 2 and r["received"] == 1
    assert r["classes"]["0:7:0"]["delay_p50_us"] == (3 - 1000) / 1000


def test_probes_to_another_host_need_both_addresses_and_sampling(capsys):
    import pytest

    from dlcp_emu.emu.trafficgen import main
    base = ["send", "--intf", "lo", "--src-mac", "00:00:00:00:00:01", "--dst-mac", "00:00:00:00:00:02",
            "--src-ip", "10.0.0.1", "--dst-ip", "10.0.0.2", "--rate-pps", "10"]
    for extra, said in ((["--probe-dst-mac", "00:00:00:00:00:03", "--sample-every", "5"], "give both or neither"),
                        (["--probe-dst-mac", "00:00:00:00:00:03", "--probe-dst-ip", "10.0.0.3"],
                         "needs --sample-every")):
        with pytest.raises(SystemExit) as e:
            main(base + extra)
        assert e.value.code == 2 and said in capsys.readouterr().err
