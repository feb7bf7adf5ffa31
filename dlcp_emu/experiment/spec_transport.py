"""The [transport] table's congestion-control fields (what `transport/settings.py` makes of
them) and the check they need of the switch: DCTCP only means something where CE is marked."""
from switch_models import PipelineSpec, SpecError as SwitchSpecError

from dlcp_emu.experiment.checks import number, one_of
from dlcp_emu.transport.congestion import INITIAL_WINDOW
from dlcp_emu.transport.settings import CONGESTION, DEFAULT_CONGESTION, DEFAULT_MIN_RTO_US, MAX_INITIAL_WINDOW

TRANSPORT_SETTINGS_FIELDS = {
    "congestion": (DEFAULT_CONGESTION, one_of(CONGESTION),
                   f"one of {', '.join(CONGESTION)} (dctcp needs a switch queue_manager \"ecn\", "
                   "ndp one that trims, \"trim\")"),
    "min_rto_us": (DEFAULT_MIN_RTO_US, number(1, 1_000_000), "a number of microseconds in 1..1000000"),
    "initial_ssthresh": ("infinite", lambda v: v == "infinite" or number(2, 1 << 20)(v),
                         "\"infinite\" or 2..1048576 packets"),
    "dctcp_alpha": (1.0, number(0, 1), "a fraction in 0..1"),
    "initial_window": (INITIAL_WINDOW, number(1, MAX_INITIAL_WINDOW), f"1..{MAX_INITIAL_WINDOW} packets"),
}


def check_congestion(c, transport, switch):
    """DCTCP answers ECN marks: a switch that marks none leaves it NewReno under another name;
    NDP's pulls are asked by the packets that arrive, whole or trimmed: a switch that drops
    instead of trimming loses the pulls with them (a switch spec that does not parse is
    reported by the caller)."""
    if transport.get("congestion") not in ("dctcp", "ndp"):
        return
    try:
        qm = PipelineSpec.parse(switch).queue_manager.name
    except SwitchSpecError:
        return
    if transport["congestion"] == "ndp":
        if qm != "trim":
            c.problems.append(f"transport.congestion: ndp's pulls are asked by every packet that arrives, whole "
                              f"or trimmed, and the switch's queue manager {qm!r} drops instead of trimming; "
                              f"use switch.queue_manager = \"trim\" (the ndp preset) or congestion = \"newreno\"")
        return
    if qm != "ecn":
        c.problems.append(f"transport.congestion: dctcp reacts to ECN marks, and the switch's queue manager "
                          f"{qm!r} marks none; use switch.queue_manager = \"ecn\" "
                          f"(e.g. {{ name = \"ecn\", mark_fraction = 0.1 }}) or congestion = \"newreno\"")
