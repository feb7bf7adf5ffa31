"""The link ledger's arithmetic (`links.link_balance`), on the counters a stop reads: a star of
two hosts around s1, h1 sending, s1 forwarding to h2. A frame a host's kernel discards was
delivered; a frame that is nowhere is lost; a frame lost with a reason balances its link."""
from dlcp_emu.emu import links
from topologies import build

STAR = build("star", hosts=2, host_rate_bps=100e6)
BASE = {h: {"rx": 1000, "rx_dropped": 7, "tx": 2000} for h in ("h1", "h2")}


def switch(rx, tx, **kw):
    """s1's stats as its process writes them (JSON: port numbers are strings): rx/tx frames
    at its ports 1 (h1) and 2 (h2), and per-port kernel counts by keyword."""
    st = {"rx_frames": {"1": rx[0], "2": rx[1]}, "tx_frames": {"1": tx[0], "2": tx[1]}}
    st.update({k: {"1": v[0], "2": v[1]} for k, v in kw.items()})
    return {"s1": st}


def hosts(h1, h2):
    """The hosts' counters now, as (rx, rx_dropped, tx) beyond BASE."""
    return {h: {"rx": BASE[h]["rx"] + rx, "rx_dropped": BASE[h]["rx_dropped"] + dropped,
                "tx": BASE[h]["tx"] + tx} for h, (rx, dropped, tx) in (("h1", h1), ("h2", h2))}


def row(checked, link):
    return next(r for r in checked["links"] if r["link"] == link)


def test_frames_a_hosts_kernel_discards_were_delivered_and_balance_their_link():
    """100 frames of an EtherType h2 has no protocol for: s1 sent them, h2's kernel received
    and discarded them (its rx and its drops both count them)."""
    checked = links.link_balance(STAR, switch(rx=(100, 0), tx=(0, 100)), hosts((0, 0, 100), (100, 100, 0)), BASE)
    r = row(checked, "s1:2->h2:0")
    assert r == {"link": "s1:2->h2:0", "tx": 100, "rx": 100, "lost": {}, "host_discarded": 100, "ok": True}
    assert checked["ok"] and checked["host_discarded"] == 100 and checked["lost"] == {}
    assert checked["frames"] == 200 and checked["unbalanced"] == []


def test_a_frame_that_is_nowhere_is_lost_even_beside_discarded_ones():
    """s1 sent 102 frames to h2, h2 received 101 (of them discarded 100): one is missing."""
    checked = links.link_balance(STAR, switch(rx=(102, 0), tx=(0, 102)), hosts((0, 0, 102), (101, 100, 0)), BASE)
    r = row(checked, "s1:2->h2:0")
    assert not r["ok"] and r["host_discarded"] == 100
    assert not checked["ok"] and checked["unbalanced"] == [r]


def test_frames_the_switch_machines_kernel_discarded_are_lost_with_that_reason():
    """h1 sent 4,002 frames; s1's socket saw 3,502 (none lost in its ring): its port's kernel
    received the other 500 and discarded them before any socket (802.1Q frames too short for
    their tag)."""
    stats = switch(rx=(3502, 0), tx=(0, 3000), rx_kernel_discarded=(500, 0), rx_socket_drops=(0, 0))
    checked = links.link_balance(STAR, stats, hosts((0, 0, 4002), (3000, 0, 0)), BASE)
    r = row(checked, "h1:0->s1:1")
    assert r["ok"] and r["lost"] == {"kernel_discarded": 500} and "host_discarded" not in r
    assert checked["ok"] and checked["lost"] == {"kernel_discarded": 500}
    # Without that count, the same frames are missing.
    del stats["s1"]["rx_kernel_discarded"]
    assert not links.link_balance(STAR, stats, hosts((0, 0, 4002), (3000, 0, 0)), BASE)["ok"]


def test_reasons_add_up_across_ports_and_a_ring_overflow_is_lost():
    stats = switch(rx=(90, 40), tx=(38, 85), rx_socket_drops=(10, 2), rx_kernel_discarded=(3, 0))
    checked = links.link_balance(STAR, stats, hosts((38, 0, 103), (85, 0, 42)), BASE)
    assert checked["ok"], checked["unbalanced"]
    assert row(checked, "h1:0->s1:1")["lost"] == {"rx_ring_full": 10, "kernel_discarded": 3}
    assert checked["lost"] == {"rx_ring_full": 12, "kernel_discarded": 3}


def test_frames_the_link_refused_to_a_host_are_not_counted_as_discarded_deliveries():
    """s1 tried 105 frames for h2; its port's kernel refused 5 (the receiving backlog was full:
    not sent, s1 counts tx_refused), which h2's kernel counts among its drops with the 10 it
    received and discarded."""
    stats = switch(rx=(105, 0), tx=(0, 100), tx_kernel_dropped=(0, 5), tx_errors=(0, 5))
    checked = links.link_balance(STAR, stats, hosts((0, 0, 105), (100, 15, 0)), BASE)
    r = row(checked, "s1:2->h2:0")
    assert r["ok"] and r["host_discarded"] == 10 and checked["host_discarded"] == 10


def test_an_end_whose_counters_are_unknown_does_not_balance():
    stats = {"s1": None}
    checked = links.link_balance(STAR, stats, hosts((0, 0, 0), (0, 0, 0)), BASE)
    assert not checked["ok"] and len(checked["unbalanced"]) == 4
    no_host = links.link_balance(STAR, switch(rx=(0, 0), tx=(0, 0)), {"h1": None, "h2": None}, BASE)
    assert not no_host["ok"]


def test_a_frame_the_link_dropped_after_a_send_that_succeeded_is_lost_as_tx_dropped():
    """Before Linux 6.8 a veth that could not hand a frame over still let the send succeed:
    s1 counted 100 frames sent to h2, its port's kernel dropped 4 of them (h2's kernel
    counts them too, with 10 it received and discarded). Since 6.8 the send fails: s1
    counts it refused (tx_errors), not sent, and nothing is lost on the link."""
    stats = switch(rx=(100, 0), tx=(0, 100), tx_kernel_dropped=(0, 4), tx_errors=(0, 0))
    checked = links.link_balance(STAR, stats, hosts((0, 0, 100), (96, 14, 0)), BASE)
    r = row(checked, "s1:2->h2:0")
    assert r["ok"] and r["lost"] == {"tx_dropped": 4} and r["host_discarded"] == 10
    refused = switch(rx=(100, 0), tx=(0, 96), tx_kernel_dropped=(0, 4), tx_errors=(0, 4))
    r = row(links.link_balance(STAR, refused, hosts((0, 0, 100), (96, 14, 0)), BASE), "s1:2->h2:0")
    assert r["ok"] and r["lost"] == {} and r["host_discarded"] == 10
