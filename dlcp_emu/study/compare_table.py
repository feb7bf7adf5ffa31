"""`compare`'s plain-text table of the presets' figures side by side."""
import json

from workloads.schedule import CLASS_BY_LABEL

from dlcp_emu.experiment import results
from dlcp_emu.experiment.fidelity_estimate import worst_pct
from dlcp_emu.study.job_table import job_table


def table(summary):
    """A plain-text table of the presets' figures, times in milliseconds."""
    compressed = any(s.get("compression", {}).get("mode", "none") != "none"
                     for s in summary["presets"].values())
    trained = any("accuracy" in s for s in summary["presets"].values())
    classes = schedule_classes(summary)
    dims = exposed_dims(summary)
    completion = [f"{SHORT[c]} p99" for c in classes] + ["exposed"] + [f"exp {d}" for d in dims] if classes \
        else ["fct p50", "fct p99", "fct p99.9"]
    head = ["preset", "transport", "iter mean", "iter p99", *completion,
            "loss", "util", "scaling", *(["sent", "energy"] if compressed else []),
            *(["accuracy", "vs lossless", "to target"] if trained else []), "fidelity"]
    rows = []
    for preset, s in summary["presets"].items():
        fid_text = fidelity_cell(s)
        rows.append([preset, results.transport_label(s), _ms(s["iteration_time_mean_s"]),
                     _ms(s["iteration_time_p99_s"]),
                     *(_schedule_cells(s, classes, dims) if classes else
                       [_ms(s["tensor_fct_p50_s"]), _ms(s["tensor_fct_p99_s"]), _ms(s["tensor_fct_p999_s"])]),
                     f"{s['loss_fraction'] * 100:.3f}%" + ("" if s["loss_within_bound"] else " > bound"),
                     "-" if s["link_utilization"] is None else f"{s['link_utilization'] * 100:.0f}%",
                     "-" if s["scaling_factor"] is None else f"{s['scaling_factor']:.2f}",
                     *(_compression_cells(s.get("compression", {})) if compressed else []),
                     *(_accuracy_cells(s.get("accuracy", {})) if trained else []),
                     fid_text + ("" if s.get("completed", True) else " INCOMPLETE")])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(x).rjust(w) for x, w in zip(r, widths)) for r in [head, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + (
        "\n(times in ms, real-world; loss = zero-filled gradient bytes)" + (SCHEDULE_LEGEND if classes else "") + (
            "\n(sent: gradient bytes sent against uncompressed; energy: share of the gradients'"
            "\n sum of squares the compressed messages kept)" if compressed else "") + (
            "\n(accuracy: final held-out accuracy, mean of the replicas; vs lossless: against the"
            "\n same training in one process, points; to target: iterations and real-world seconds"
            "\n to reach the target accuracy)" if trained else "") +
        (FIDELITY_LEGEND if summary.get("backend") == "emu" else "") + scale_note(summary) + job_table(summary))


# Below this many frames a message on average, byte scale moved the default example's results
# by 8-46% from full size (docs/engines-and-scale.md, "How far the scale moves the results":
# 3.6 frames at byte scale 0.002, +28-46%; 30 at 0.02, +8-17%; 75 at 0.05, +8%; 150 at 0.1,
# 2-10%), and the rail example's dlcp went from 3.3% faster than fifo to 7.8% slower (38 -> 1.3).
SCALE_NOTE_FRAMES = 50


def scale_note(summary):
    """A line under the table when the runs' messages are few frames long (SCALE_NOTE_FRAMES),
    naming the smallest; '' otherwise."""
    small = {preset: s["message_frames_mean"] for preset, s in summary["presets"].items()
             if s.get("message_frames_mean") is not None and s["message_frames_mean"] < SCALE_NOTE_FRAMES}
    if not small:
        return ""
    preset = min(small, key=small.get)
    s = summary["presets"][preset]
    return (f"\n(scale: {preset}'s messages are {small[preset]:g} frames on average at byte scale "
            f"{s['byte_scale']:g};\n below {SCALE_NOTE_FRAMES} the default example's results moved "
            f"8-46% from full size and a ranking\n of presets can turn: check with --vary "
            f"byte_scale=... (docs/engines-and-scale.md))")


SHORT = {"gradient": "grad", "activation": "act", "activation-gradient": "act-grad", "parameters": "params",
         "all-to-all": "a2a"}   # a schedule's traffic classes in the table's head


def schedule_classes(summary):
    """The traffic classes of a comparison's schedule runs, in `TrafficClass` order (none:
    no run is a schedule's)."""
    seen = {c for s in summary["presets"].values() for c in s.get("traffic_classes") or {}}
    return [label for label in CLASS_BY_LABEL if label in seen]


DIMS = ("tp", "pp", "dp", "ep", "edp", "embed", "p2p")   # the order of the exposed columns


def exposed_dims(summary):
    """The parallelism dimensions the schedule runs' ranks waited on (`schedule_exposure`)."""
    seen = {d for s in summary["presets"].values() for d in s.get("exposed_comm_by_dim_s") or {}}
    return [d for d in DIMS if d in seen] + sorted(seen - set(DIMS))


def _schedule_cells(s, classes, dims):
    """Per class the p99 completion of its messages, the exposed communication, and its
    share waited on each dimension."""
    by_class, by_dim = s.get("traffic_classes") or {}, s.get("exposed_comm_by_dim_s") or {}
    return [_ms_fine((by_class.get(c) or {}).get("fct_p99_s")) for c in classes] + \
        [_ms(s.get("exposed_comm_mean_s"))] + [_ms_fine(by_dim.get(d, 0.0 if by_dim else None)) for d in dims]


def _ms_fine(v):
    """ms with the digits a small figure needs (a TP all-reduce's tens of microseconds)."""
    if v is None:
        return "-"
    ms = v * 1e3
    return f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}" if ms >= 0.1 else f"{ms:.3f}"


def _accuracy_cells(a):
    if a.get("final") is None:
        return ["-", "-", "-"]
    reach = "-" if a.get("iterations_to_target") is None else \
        f"{a['iterations_to_target']:.0f} it, {a['time_to_target_s']:.2f} s"
    return [f"{a['final'] * 100:.2f}%", f"{a['difference'] * 100:+.2f}", reach]


def _compression_cells(c):
    pct = [c.get("wire_fraction"), c.get("energy_kept")]
    return ["-" if v is None else f"{v * 100:.0f}%" for v in pct]


def _ms(v):
    return "-" if v is None else f"{v * 1e3:.1f}"


def print_json(summary):
    print(json.dumps(summary, indent=2, default=str))


def fidelity_cell(s):
    """`virtual time` for a simulated run; an emulated run's estimate (`~+2.1%`, the larger
    of mean iteration and p99 tensor completion), `!` when above its tolerance, and `behind!`
    when a fixed rule fired (socket drops, a long stall)."""
    if s.get("backend") == "simulation":
        return "virtual time"
    fid = s.get("fidelity") or {}
    est = fid.get("estimate")
    text = "-" if est is None else f"~{worst_pct(est):+.1f}%" + ("!" if fid.get("estimate_flagged") else "")
    return ("behind! " if fid.get("fell_behind") else "") + text


# For schedule runs (docs/schedules.md): the classes' parallelism in generated LLM schedules.
SCHEDULE_LEGEND = (
    "\n(<class> p99: completion of the class's messages, sent to whole at their destination;"
    "\n grad(ient): DP (ZeRO: its reduce-scatter), act(ivation) and act(ivation)-grad(ient): TP"
    "\n and PP, params: ZeRO's all-gathers, a2a: EP's all-to-all; exposed: iteration time beyond each"
    "\n rank's compute, mean: communication waited on, pipeline bubbles included; exp <dim>: the"
    "\n part of it each parallelism's messages ended (tp, pp, dp, ...: docs/schedules.md))")

# For emulated runs only: simulated ones run in virtual time, exact by construction.
FIDELITY_LEGEND = (
    "\n(fidelity: the run's estimate of how far its mean iteration or p99 tensor completion"
    "\n is from the model's schedule, from the lateness its hosts and switches measured"
    "\n (docs/fidelity.md); '!': above the spec's fidelity_tolerance, raise time_dilation;"
    "\n 'behind!': switch sockets dropped frames, or one stall took over that share of an iteration)")
