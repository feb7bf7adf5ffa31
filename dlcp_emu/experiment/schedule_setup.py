"""A schedule run's plan, derived one way wherever it is needed: by the run's set-up
(`experiment.run.prepare`) and by each emulated host process (`emu.hostd`, from the workload
section and the ranks' servers its config carries), so that an emulated host runs the
program the simulator's agent of that rank runs."""
from dlcp_emu.host.schedule_plan import make_schedule_plan


def servers_of(placement, topology, per):
    """[server number of rank r], the hierarchical algorithms' groups: the server of the GPU
    the rank was placed on, when the topology has servers (whatever the placement); else
    ranks in blocks of the workload's gpus_per_server (`per`)."""
    hosts = placement.host_of_rank
    ranks = sorted(hosts)
    names = [topology.server_of(hosts[r]) for r in ranks]
    if not any(names):
        return [r // per for r in ranks]
    number = {name: i for i, name in enumerate(dict.fromkeys(names))}
    return [number[name] for name in names]


def schedule_plan(schedule, workload, scale, servers):
    """The SchedulePlan of a validated schedule (`spec_schedule.schedule_of(workload)`) on a
    run of this `scale`, its collectives expanded by the workload's algorithms over
    `servers` (servers_of)."""
    return make_schedule_plan(schedule, scale, workload["algorithms"], server_of=list(servers).__getitem__)
