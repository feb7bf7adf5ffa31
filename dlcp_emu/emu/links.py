"""Every link of an emulated network balances: the frames one end sent are the frames the
other end received, or were lost on the link for a reason. And a stop that loses none.

A link's ends are switch ports (our switch processes count what they read and what the
kernel took from them) or host interfaces (the host kernel's counters, in
/proc/<pid>/net/dev of a process in the host's namespace, less what they were once the
switches were ready). Lost on a link, by reason: frames the receiving switch's ring had no
room for (`rx_ring_full`, the kernel's count on its socket), and frames the switch
machine's kernel received on the port and discarded before any socket saw them
(`kernel_discarded`: its receive count less what reached the socket; an 802.1Q frame too
short for its tag is one). A frame cut by a ring is received (and dropped as
`rx_truncated` in the switch's own conservation).

Received is not the same as wanted: a host's kernel takes every frame its link delivers and
discards those no protocol or socket of the host wants (an unknown EtherType, a frame for
another VLAN or address), counting them as dropped. Those were delivered: a row's
`host_discarded` says how many, and they balance the link as received. The same drop count
also holds the frames the link could not hand to the host (a veth refuses a frame when the
receiving backlog is full; the sending switch counts the send as `tx_refused`, and its port's
kernel as `tx_dropped`), which are not discarded deliveries: they are taken out. On a kernel
whose veth does not fail such a send (before Linux 6.8), the switch counted the frame sent:
it is lost on the link as `tx_dropped`.

Stopping a network without losing frames (`drain`): the hosts stop first (the caller),
then the switches go on forwarding until the network is quiet: every switch holds nothing
(queued, in flight, on a host's emulated link), every host's egress queue is empty and every
link balances, with the same counters for QUIET_S. A host's kernel may still send once its
programs have ended (a TCP FIN or segment retransmitted after a timeout that backs off from
200 ms to seconds, the answer to it): CI saw a host send one frame more than its switch had
read, twice. So the hosts are then muted (`EmulatedNetwork.mute_hosts`: their egress drops
and counts what they send), the switches forward what was sent until then, quiet for
MUTED_QUIET_S, and only then are they stopped.
Stopping them all at once while frames were on their way (each stopped reading before its
upstream had drained) lost frames between switches that no counter saw.
"""
import re
import signal
import time

LOST_AT_SWITCH = "rx_ring_full"
LOST_AT_SWITCH_KERNEL = "kernel_discarded"
LOST_ON_LINK = "tx_dropped"     # the sending port's kernel could not hand it over, unseen
POLL_S = 0.002
QUIET_S = 0.3   # counters unchanged this long: the network is quiet (> TCP's 200 ms minimum RTO)
MUTED_QUIET_S = 0.05  # the same once hosts are muted: only frames already sent can still move


def host_counters(pid):
    """{interface: {"rx", "rx_dropped", "tx"}} in the network namespace of process `pid`."""
    out = {}
    with open(f"/proc/{pid}/net/dev") as f:
        for line in f.readlines()[2:]:
            name, _, data = line.partition(":")
            v = data.split()
            out[name.strip()] = {"rx": int(v[1]), "rx_dropped": int(v[3]), "tx": int(v[9])}
    return out


def hosts_counters(net, topology):
    """{host: its interface's counters} for every host of a Mininet net (None if unreadable)."""
    out = {}
    for h in topology.hosts():
        (port,) = topology.ports(h)
        try:
            out[h] = host_counters(net.get(h).pid)[topology.intf_name(h, port.number)]
        except (OSError, KeyError, IndexError, ValueError):
            out[h] = None
    return out


def _port(counts, port):
    """A per-port counter from switch stats, whether read from JSON (str keys) or not."""
    if counts is None:
        return None
    v = counts.get(str(port))
    return counts.get(port) if v is None else v


def _sent(node, port, stats, hosts, base):
    """(frames `node` sent on `port`, frames its port's kernel could not hand over, of those
    the ones its send did not see refused), or Nones where unknown. A veth that cannot hand a
    frame over fails the send since Linux 6.8 (the switch counts `tx_refused` and no frame
    sent); before, the send succeeded and the frame was lost on the link."""
    if node in stats:
        st = stats[node]
        if not st or "tx_frames" not in st:
            return None, None, None
        dropped = _port(st.get("tx_kernel_dropped"), port) or 0
        unseen = dropped - (_port(st.get("tx_errors"), port) or 0)
        return _port(st["tx_frames"], port), dropped, unseen if unseen > 0 else 0
    now, then = hosts.get(node), (base or {}).get(node)
    if now is None or then is None:
        return None, None, None
    return now["tx"] - then["tx"], 0, 0


def _received(node, port, stats, hosts, base):
    """(frames `node` received on `port`, lost on the way in by reason, frames its kernel
    counted as dropped: a host's, None at a switch), or Nones where unknown."""
    if node in stats:
        st = stats[node]
        if not st or "rx_frames" not in st:
            return None, {}, None
        lost = {LOST_AT_SWITCH: _port(st.get("rx_socket_drops"), port) or 0,
                LOST_AT_SWITCH_KERNEL: _port(st.get("rx_kernel_discarded"), port) or 0}
        return _port(st["rx_frames"], port), {r: k for r, k in lost.items() if k}, None
    now, then = hosts.get(node), (base or {}).get(node)
    if now is None or then is None:
        return None, {}, None
    return now["rx"] - then["rx"], {}, now["rx_dropped"] - then["rx_dropped"]


def balance(src, sp, dst, dp, stats, hosts, base):
    """One direction of a link: {"link", "tx", "rx", "lost" by reason, "ok"}, and at a host
    "host_discarded" (delivered, then discarded by the host's kernel; part of rx)."""
    tx, not_handed, unseen = _sent(src, sp, stats, hosts, base)
    rx, lost, dropped = _received(dst, dp, stats, hosts, base)
    if unseen:
        lost[LOST_ON_LINK] = unseen
    row = {"link": f"{src}:{sp}->{dst}:{dp}", "tx": tx, "rx": rx, "lost": lost}
    if dropped is not None:
        # The host's drop count holds what the sending port's kernel could not hand over too.
        row["host_discarded"] = dropped - (not_handed or 0)
    row["ok"] = tx is not None and rx is not None and tx == rx + sum(lost.values())
    return row


def link_balance(topology, stats, hosts, base):
    """Both directions of every link: {"ok", "frames" (sent over all links), "lost" (by
    reason, over all links), "host_discarded", "links": [`balance` rows], "unbalanced": the
    rows that are not ok}. stats: switch -> stats (final or a snapshot); hosts, base:
    `hosts_counters` now and when the switches were ready."""
    rows = []
    for s in topology.switches():
        stats.setdefault(s, None)
    for link in topology.links:
        for src, dst in ((link.a, link.b), (link.b, link.a)):
            p = topology.ports_to(src, dst)
            q = topology.ports_to(dst, src)
            for sp, dp in zip(p, q):          # parallel links pair up in port order
                rows.append(balance(src, sp, dst, dp, stats, hosts, base))
    rows = list({r["link"]: r for r in rows}.values())   # parallel links were seen twice
    lost = {}
    for r in rows:
        for reason, k in r["lost"].items():
            lost[reason] = lost.get(reason, 0) + k
    return {"ok": all(r["ok"] for r in rows), "frames": sum(r["tx"] or 0 for r in rows),
            "lost": lost, "host_discarded": sum(r.get("host_discarded") or 0 for r in rows),
            "links": rows, "unbalanced": [r for r in rows if not r["ok"]]}


def fresh_stats(switches, deadline):
    """Ask every switch process for its counters now (SIGUSR1) and wait for them: {name:
    stats}, or None if one did not answer by `deadline` (time.monotonic())."""
    last = {}
    for s in switches:
        st = s.read_stats()
        last[s.name] = st.get("snapshot", -1) if st else -1
        s._signal(signal.SIGUSR1)
    out = {}
    while len(out) < len(switches):
        for s in switches:
            if s.name not in out:
                st = s.read_stats()
                if st and st.get("snapshot", -1) > last[s.name]:
                    out[s.name] = st
        if len(out) < len(switches):
            if time.monotonic() > deadline:
                return None
            time.sleep(POLL_S)
    return out


def host_backlog(host, intf):
    """Packets waiting in a host's egress qdisc (its pacing token bucket)."""
    m = re.search(r"backlog \S+ (\d+)p", host.cmd(f"tc -s qdisc show dev {intf}"))
    return int(m.group(1)) if m else 0


def _held(stats):
    return sum(st["conservation"]["queued"] + st["conservation"]["on_link"]
               for st in stats.values())


def drain(net, topology, switches, base, timeout_s, paced=False, quiet_s=QUIET_S):
    """After the hosts have stopped: wait, bounded, until the network is quiet (see the
    module's docstring). True if it was, False at the deadline."""
    deadline = time.monotonic() + timeout_s
    if paced:
        for h in topology.hosts():
            (port,) = topology.ports(h)
            intf = topology.intf_name(h, port.number)
            while host_backlog(net.get(h), intf) and time.monotonic() < deadline:
                time.sleep(0.005)
    before, since = None, None
    while time.monotonic() < deadline:
        stats = fresh_stats(switches, deadline)
        if stats is None:
            return False
        hosts = hosts_counters(net, topology)
        check = link_balance(topology, dict(stats), hosts, base)
        counters = [(r["tx"], r["rx"]) for r in check["links"]]
        if check["ok"] and _held(stats) == 0:
            if counters != before:
                before, since = counters, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return True
            time.sleep(quiet_s / 10)   # ten looks while it stays quiet
        else:
            before = None
    return False
