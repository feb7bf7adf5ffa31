"""A run's summary, the same for both backends: the figures of its tables
(`results.summarize`) and what the spec and switch say of the run; `finish` notes how it
ended and writes every table."""
from switch_models import PipelineSpec

from dlcp_emu.experiment import results
from dlcp_emu.experiment.settings import transport_settings
from dlcp_emu.experiment.topology import buffer_floor_applied
from dlcp_emu.transport import TRANSPORTS
from dlcp_emu.transport.message import transport_payload_size


def summary(spec, pipeline, transport, its, tens, dels, ports, fidelity, duration_s, plan):
    s = results.summarize(its, tens, dels, ports,
                          compute_s=spec.scale.seconds(plan.compute_ns),
                          workers=spec.workload["workers"],
                          loss_bound=spec.transport["loss_bound"] if TRANSPORTS[transport].bounded_loss else 0.0,
                          fidelity=fidelity, duration_s=duration_s)
    s["compression"] = results.compression_summary(spec.compression, tens)
    switch = PipelineSpec.parse(pipeline)
    s.update({"preset": switch.name, "pipeline": switch.describe(),
              "transport": transport,
              "transport_settings": None if TRANSPORTS[transport].kernel
              else transport_settings(spec).describe(spec.time_dilation),
              "model": spec.workload.get("model") or spec.workload.get("trace") or spec.workload.get("path")
              or f"{spec.training['model']}-{spec.training['dataset']}",
              "pattern": spec.workload["pattern"], "time_dilation": spec.time_dilation,
              "byte_scale": spec.byte_scale, "buffer_floor": buffer_floor_applied(spec),
              "message_frames_mean": message_frames_mean(dels, spec.mtu)})
    return s


def message_frames_mean(deliveries, mtu):
    """The frames a training message fills on average (its bytes, at the run's byte scale, over
    the transport's payload a frame), None without messages: how far a run's scale has shrunk
    its messages (compare_table.scale_note)."""
    if deliveries is None or not len(deliveries) or "nbytes" not in deliveries:
        return None
    payload = transport_payload_size(mtu)
    return round(float((-(-deliveries["nbytes"].to_numpy() // payload)).mean()), 1)


def finish(run_dir, s, frames, interrupted):
    """What both backends do last: note why a run stopped early, summarise packet fates and
    background flows, and write every table (even empty ones, so readers find them)."""
    s["completed"] = interrupted is None
    if interrupted:
        s["stopped_because"] = interrupted
        s["interrupted"] = interrupted.startswith("interrupted")
    packets = frames.get("packets")
    if packets is not None and len(packets):
        s["packets"] = packets["fate"].value_counts().to_dict()
    background = frames.get("background")
    if background is not None and len(background):
        done = background[background["state"] == "done"]
        s["background"] = {"flows": int(len(background)), "completed": int(len(done)),
                           "fct_p50_s": results.percentile(done["fct_s"], 50),
                           "fct_p99_s": results.percentile(done["fct_s"], 99)}
    for name, frame in frames.items():
        results.write_table(run_dir, name, frame)
    return s
