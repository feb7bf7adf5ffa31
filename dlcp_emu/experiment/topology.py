"""The topology as a run has it: the spec's, scaled. Link rates are multiplied by
byte_scale / time_dilation and delays by time_dilation (`dlcp_emu.scale.Scale`), so a
real-world second is time_dilation emulated seconds; both backends run this topology."""
from topologies import build as build_topology, builder_params

from dlcp_emu.transport.congestion import ETHERNET_FRAMING

# A scaled buffer holds at least this many full frames: packets are not scaled, only their
# number, so a buffer scaled below a few frames could not queue at all.
MIN_BUFFER_FRAMES = 16


def scaled_topology(spec):
    """The topology as emulated: rates * byte_scale / dilation, delays * dilation, buffers *
    byte_scale (the same queueing delay in real-world time), but never under
    MIN_BUFFER_FRAMES frames: with strong byte scaling buffers are then deeper, in real-world
    time, than the spec's (`buffer_floor` in the summary says so)."""
    kind = spec.topology["kind"]
    params = {k: v for k, v in spec.topology.items() if k != "kind"}
    defaults = builder_params(kind)
    scale = spec.scale
    for key in list(params):
        if key.endswith("rate_bps") and params[key] is not None:
            params[key] = scale.rate_bps(params[key])
        elif key.endswith("delay_ns") and params[key] is not None:
            params[key] = scale.delay_ns(params[key])
    floor = MIN_BUFFER_FRAMES * (spec.mtu + 14)
    for key, default in defaults.items():
        if key.endswith("buffer_bytes"):
            real = params.get(key, default)
            if real is not None:
                params[key] = max(floor, scale.nbytes(real))
    return build_topology(kind, **params)


def buffer_floor_applied(spec):
    defaults = builder_params(spec.topology["kind"])
    real = [spec.topology.get(k, v) for k, v in defaults.items() if k.endswith("buffer_bytes")]
    return any(b is not None and b * spec.byte_scale < MIN_BUFFER_FRAMES * (spec.mtu + 14) for b in real)



def host_link_rate(topology, host):
    """The rate of a host's (only) link, as the topology has it (scaled, for a run)."""
    (port,) = topology.ports(host)
    return port.link.rate_bps


def host_frame_ns(topology, mtu):
    """A full frame's time on the wire (Ethernet framing included) on the fastest host link,
    ns: the yardstick of the hosts' waits and the switches' wake period."""
    return (mtu + ETHERNET_FRAMING) * 8e9 / max(host_link_rate(topology, h) for h in topology.hosts())
