"""The spec's [transport] and [compression] tables as a run's senders and agents take them,
in the run's (dilated) time."""
import math

from dlcp_emu.host.compression import CompressionSpec
from dlcp_emu.transport.settings import TransportSettings


def compression_for(spec):
    """The agents' CompressionSpec: the spec's real-world target delay in the run's (dilated)
    time."""
    c = dict(spec.compression)
    target_ms = c.pop("target_delay_ms")
    return CompressionSpec(**c, target_delay_ns=spec.scale.stretch(target_ms * 1e6))


def transport_settings(spec):
    """The senders' TransportSettings: the spec's congestion control, and its RTO floor in the
    run's (dilated) time."""
    t = spec.transport
    ssthresh = math.inf if t["initial_ssthresh"] == "infinite" else float(t["initial_ssthresh"])
    return TransportSettings(t["congestion"], int(spec.scale.stretch(t["min_rto_us"] * 1000)), ssthresh,
                             float(t["dctcp_alpha"]), t["initial_window"])
