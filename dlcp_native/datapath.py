"""The switch process's data path compiled (src/datapath/): the Python face of that layer.
`Datapath` is the forwarding loop through the switch model, `Forwarder` the loop without a
model (`dlcp_emu.emu.datapath.native_loop`), `Histogram` their lateness bins; the frame
parser and rewrites (`parse_frame`, `trim_frame`, `mark_ce`); and the probes of what this
machine charges the emulator's kind of work (`probe_wake_lag`, `probe_round_trips`,
`dlcp_emu.study.dilation`).
"""
from ._core import (  # noqa: F401  (this module is their one way out of the core)
    Datapath,
    Forwarder,
    Histogram,
    mark_ce,
    parse_frame,
    probe_round_trips,
    probe_wake_lag,
    trim_frame,
)
