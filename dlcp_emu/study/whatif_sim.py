"""The NetAI'20 what-if question answered by the packet-level simulator: on a non-blocking
star at B Gbit/s, what iteration time, link utilisation and so scaling factor does ring
all-reduce over a real transport reach, beside the closed form's fully used network?

Differences by design: the simulator gates each layer's forward pass on its update (the
closed form only counts the tail after backward), adds no GPU vector-add time, and uses
Horovod fusion on the trace's ready times. Gradient bytes and link rates are scaled by the
same factor, which keeps every time in real-world seconds.
"""
from dlcp_emu.experiment.run import run
from dlcp_emu.sim.run import SimBackend
from dlcp_emu.experiment.spec import parse_spec
from dlcp_emu.study.whatif import whatif


def whatif_sim(model, workers, bandwidth_gbps, run_dir, byte_scale=0.01, iterations=3,
               transport="reliable", preset="fifo", log=lambda m: None):
    spec = parse_spec({
        "name": f"whatif-{model}-{workers}-{bandwidth_gbps:g}g", "seed": 1,
        "time_dilation": 1.0, "byte_scale": byte_scale, "time_limit_s": 600,
        "topology": {"kind": "star", "hosts": workers, "host_rate_bps": bandwidth_gbps * 1e9,
                     "buffer_bytes": 4 * 1024 * 1024},
        "workload": {"model": model, "pattern": "ring", "workers": workers, "iterations": iterations},
        "transport": {"kind": transport}, "switch": {"preset": preset},
    })
    s, _ = run(spec, SimBackend(), preset, run_dir, log=log)
    closed = whatif(model, workers, bandwidth_gbps)
    return {"model": model, "workers": workers, "bandwidth_gbps": bandwidth_gbps,
            "closed_form_scaling_factor": closed.scaling_factor,
            "closed_form_network_utilization": closed.network_utilization,
            "simulated_scaling_factor": s["scaling_factor"],
            "simulated_iteration_time_s": s["iteration_time_mean_s"],
            "simulated_link_utilization": s["link_utilization"],
            "transport": transport, "byte_scale": byte_scale, "completed": s["completed"]}
