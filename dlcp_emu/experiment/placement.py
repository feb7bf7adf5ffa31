"""Who runs where: the ranks of a run on the hosts of its (scaled) topology."""
from dataclasses import dataclass

from workloads import PATTERNS


@dataclass(frozen=True)
class Placement:
    workers: int
    ps_ranks: tuple
    host_of_rank: dict        # rank -> host name


def place(spec, topology):
    """Which host runs which rank: workers first, then parameter servers. `spread` deals
    the ranks round robin over the racks (edge switches), so that neighbours in a ring sit in
    different racks and synchronisation crosses the fabric; `packed` fills rack after rack."""
    w = spec.workload
    n = w["workers"]
    ps = tuple(range(n, n + w["ps"])) if PATTERNS[w["pattern"]].uses_ps else ()
    hosts = topology.hosts()
    if w["placement"] == "spread":
        racks = {}
        for h in hosts:
            racks.setdefault(topology.attached_switch(h)[0], []).append(h)
        columns = list(racks.values())
        hosts = [col[i] for i in range(max(map(len, columns))) for col in columns if i < len(col)]
    return Placement(n, ps, {r: hosts[r] for r in range(n + len(ps))})
