"""A paced host's egress queue in the kernel: the `tc` commands that make a host's interface
send as the simulator's NIC (`switch_models.nic.HostNic`) does, its queue the pipeline's
`host_queue`.

- `fifo`: a token bucket (tbf) at the link rate, counting the same Ethernet overhead per frame
  as the switch ports (a size table), over its own byte FIFO.
- `priority`: an HTB shaper at the link rate (the same overhead, the same burst) with two
  leaf classes under it, each a byte FIFO as deep as the NIC's buffer. u32 filters put DLCP
  control packets (every type but DATA, and a DATA packet with no payload: `is_control`, the
  simulator's `is_header` of what a host sends) in the first leaf, everything else in the
  second. Each leaf is guaranteed next to nothing (8 bit/s) and borrows the link from their
  parent, which lends by the leaves' priority whenever it has tokens: the next frame to leave
  is always a waiting control packet if there is one, after the frame on the wire (strict
  priority without preemption, as the simulator's NIC). A `prio` qdisc under the tbf would
  say it in fewer words, but not every kernel has one (CONFIG_NET_SCH_PRIO; this project's
  test machine has not). What the tiny guarantee costs: each leaf's first frame leaves on
  its own tokens, once: 2 frames ahead of the rate over a host's whole run.

The kernel keeps the whole backlog, as deep as the simulator's NIC: a shallow kernel queue
refilled by the host's process would leave the link idle whenever that process is late on a
loaded machine. The data plane's own backlog (datagrams the socket refused once its send
buffer is full) keeps the same order (`native_host`, `udp_driver`).

The filters read the DLCP header at fixed offsets from the IPv4 header, as the switch's data
path does: a 20-byte IPv4 header (no options, as the host's kernel sends UDP), UDP, then the
DLCP magic, type and payload length.
"""
from dlcp_emu.wire.layout import (HDR_MAGIC, HDR_PAYLOAD_LEN, HDR_TYPE, IPPROTO_UDP, IPV4_LEN, MAGIC,
                                  UDP_LEN, PacketType)
from switch_models import ETHERNET_OVERHEAD, HOST_BUFFER_BYTES
from switch_models.nic import HOST_QUEUES

CONTROL_CLASS, DATA_CLASS = "1:10", "1:20"   # the HTB leaves (HTB prio 0 and 1)
_AT = IPV4_LEN + UDP_LEN                     # the DLCP header, from the start of the IPv4 header
_LEAF_RATE = "8bit"                          # a leaf's own guarantee: it borrows all it sends


def is_control(ptype, payload_len):
    """A packet a `priority` host queue sends ahead of data, by its DLCP header's type and
    payload length: every type but DATA, and DATA with no payload."""
    return ptype != PacketType.DATA or payload_len == 0


def egress_commands(intf, rate_bps, burst_bytes, host_queue, frame_bytes, limit_bytes=HOST_BUFFER_BYTES):
    """The `tc` commands (each one string, run in the host's namespace in order) that pace
    `intf` at rate_bps with a bucket of burst_bytes and queue as `host_queue` says;
    frame_bytes: the longest frame on the wire (a leaf's own bucket and turn)."""
    if host_queue not in HOST_QUEUES:
        raise ValueError(f"host_queue must be one of {', '.join(HOST_QUEUES)}, got {host_queue!r}")
    dev, rate, burst = f"dev {intf}", f"{int(rate_bps)}bit", int(burst_bytes)
    if host_queue == "fifo":
        return [f"tc qdisc replace {dev} root stab overhead {ETHERNET_OVERHEAD} tbf "
                f"rate {rate} burst {burst} limit {int(limit_bytes)}"]
    # HTB counts the overhead itself (a size table on its root was not applied the same).
    shape = f"ceil {rate} cburst {burst} overhead {ETHERNET_OVERHEAD}"
    dlcp = (f"match ip protocol {IPPROTO_UDP} 0xff match u8 0x05 0x0f at 0 "
            f"match u16 {MAGIC:#06x} 0xffff at {_AT + HDR_MAGIC}")
    data = f"match u8 {int(PacketType.DATA)} 0xff at {_AT + HDR_TYPE}"
    empty = f"match u16 0 0xffff at {_AT + HDR_PAYLOAD_LEN}"
    u32 = f"tc filter add {dev} parent 1: protocol ip"
    leaf = f"htb rate {_LEAF_RATE} burst {int(frame_bytes)} quantum {int(frame_bytes)} {shape}"
    return [f"tc qdisc replace {dev} root handle 1: htb default {DATA_CLASS.split(':')[1]}",
            # Every class's DRR quantum set: one derived from a rate warns (on stderr) when
            # out of 1000..200000 bytes; with one class a priority it is never used.
            f"tc class add {dev} parent 1: classid 1:1 htb rate {rate} burst {burst} quantum {int(frame_bytes)} {shape}",
            f"tc class add {dev} parent 1:1 classid {CONTROL_CLASS} {leaf} prio 0",
            f"tc class add {dev} parent 1:1 classid {DATA_CLASS} {leaf} prio 1",
            f"tc qdisc add {dev} parent {CONTROL_CLASS} handle 10: bfifo limit {int(limit_bytes)}",
            f"tc qdisc add {dev} parent {DATA_CLASS} handle 20: bfifo limit {int(limit_bytes)}",
            f"{u32} prio 1 u32 {dlcp} {data} {empty} flowid {CONTROL_CLASS}",
            f"{u32} prio 2 u32 {dlcp} {data} flowid {DATA_CLASS}",
            f"{u32} prio 3 u32 {dlcp} flowid {CONTROL_CLASS}"]
