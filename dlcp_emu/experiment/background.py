"""The spec's background flows, drawn once for a run and the same for both backends."""
from workloads import poisson_flows

from dlcp_emu.experiment.spec_checks import MAX_BACKGROUND_FLOWS
from dlcp_emu.experiment.topology import host_link_rate


def background_flows(spec, topology):
    """The spec's background flows, the same for both backends: {host: [(start_ns, dst host
    index, nbytes, flow id), ...]} with times in emulated ns from the start and sizes scaled
    by byte_scale. Arrivals are as in the real-world network slowed by the dilation (real
    flow sizes over the unscaled rate), so the offered load is the spec's fraction of each
    host link."""
    hosts = topology.hosts()
    rate = host_link_rate(topology, hosts[0])
    bg = spec.background
    flows = poisson_flows(bg["distribution"], bg["load"], rate / spec.byte_scale * len(hosts),
                          spec.time_limit_s, hosts, spec.seed, max_flows=MAX_BACKGROUND_FLOWS)
    index = {h: i for i, h in enumerate(hosts)}
    by_src = {h: [] for h in hosts}
    scale = spec.scale   # a new Scale each time it is read: once, not once a flow
    for fid, f in enumerate(flows):
        by_src[f.src].append((int(f.start_s * 1e9), index[f.dst], max(1, scale.nbytes(f.nbytes)), fid))
    return by_src
