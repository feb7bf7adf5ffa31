"""Multi-GPU servers and the rail-optimized fabric: the builders' shape, the routes (traffic
inside a server stays in it, traffic to another server travels on the destination GPU's rail,
servers carry no one else's traffic), the servers' own pipeline in both engines, and bad input
named by its field."""
import itertools

import pytest

from dlcp_emu.experiment.run import run
from dlcp_emu.experiment.spec import parse_spec
from dlcp_emu.sim.engines import WALL_CLOCK_KEYS
from dlcp_emu.sim.run import SimBackend
from switch_models import PipelineSpec
from topologies import SERVER, TopologyError, build, fat_tree, leaf_spine, rail_optimized
from topologies.servers import SERVER_PIPELINE


def rails(**kw):
    return rail_optimized(**{"servers": 4, "gpus_per_server": 4, "nic_rate_bps": 100e9, "pods": 2,
                             "spines": 2, **kw})


def rail_leaf(t, host):
    """The leaf a GPU's NIC goes to."""
    server, nic = t.nic_port(host)
    (peer,) = [p.peer for p in t.ports(server) if p.number == nic]
    return peer


def own_nic(t, server, k):
    """The NIC port of a server's GPU k."""
    return t.nic_port(t.gpus(server)[k])[1]


def test_rail_optimized_counts_names_and_rank_order():
    t = rails()
    assert len(t.hosts()) == 16 and t.servers() == ["srv1", "srv2", "srv3", "srv4"]
    roles = [t.node(s).role for s in t.switches()]
    assert roles.count(SERVER) == 4 and roles.count("leaf") == 2 * 4 and roles.count("spine") == 2
    assert len(t.links) == 16 + 16 + 8 * 2   # NVLinks, NICs, leaf-spine
    # Host index N is GPU (N-1) % G of server (N-1) // G: rank r packed -> (server, gpu) explicit.
    for n, h in enumerate(t.hosts()):
        assert (t.server_of(h), t.gpu_index(h)) == (f"srv{n // 4 + 1}", n % 4)
        assert t.gpus(t.server_of(h))[t.gpu_index(h)] == h
    nvlink = {l.rate_bps for l in t.links if t.node(l.a).is_host}
    nics = {l.rate_bps for l in t.links if t.is_server(l.a) and not t.node(l.b).is_host}
    assert nvlink == {3.6e12} and nics == {100e9}


def test_gpu_i_of_every_server_is_on_rail_i_s_leaf():
    t = rails()
    leaf_of = {}
    for h in t.hosts():
        leaf = rail_leaf(t, h)
        pod = t.node(t.server_of(h)).pod
        leaf_of.setdefault((pod, t.gpu_index(h)), set()).add(leaf)
        assert t.node(leaf).role == "leaf" and t.node(leaf).pod == pod
        assert leaf == f"l{pod * 4 + t.gpu_index(h) + 1}"   # rail i of pod p (the names' rule)
    assert all(len(v) == 1 for v in leaf_of.values())                 # one leaf a rail and pod
    assert len({next(iter(v)) for v in leaf_of.values()}) == 2 * 4     # and no leaf on two rails


def test_server_to_server_traffic_leaves_and_enters_by_the_destination_s_rail():
    t = rails()
    for src, dst in itertools.permutations(t.hosts(), 2):
        s, d = t.server_of(src), t.server_of(dst)
        if s == d:
            continue
        paths = t.paths(src, dst)
        assert paths and t.count_paths(src, dst) == len(paths)
        out_leaf = {p.peer for p in t.ports(s) if p.number == own_nic(t, s, t.gpu_index(dst))}
        for path in paths:
            assert path[1] == s and path[-2] == d
            assert {path[2]} == out_leaf, (src, dst, path)           # the sender's NIC k
            assert path[-3] == rail_leaf(t, dst), (src, dst, path)   # the receiver's NIC k
            assert not any(t.is_server(n) for n in path[2:-2]), path  # no server in transit
            assert len(path) - 1 == t.hop_count(src, dst)
        # What the switches do: the sender's server routes by its NIC of the destination's
        # GPU index, and each hop's route follows the paths.
        assert t.equal_cost_next_hops(s)[dst] == (own_nic(t, s, t.gpu_index(dst)),)


def test_traffic_inside_a_server_never_touches_a_leaf():
    t = rails()
    for src, dst in itertools.permutations(t.hosts(), 2):
        if t.server_of(src) == t.server_of(dst):
            assert t.paths(src, dst) == [(src, t.server_of(src), dst)]
            assert t.hop_count(src, dst) == 2


def test_route_tables_are_exactly_the_paths_and_lead_into_no_other_server():
    for t in (rails(), rails(pods=1, spines=1),
              leaf_spine(2, 2, 4, 10e9, gpus_per_server=2),
              fat_tree(4, 10e9, gpus_per_server=2)):
        for src, dst in itertools.permutations(t.hosts(), 2):
            nexts = {}
            for path in t.paths(src, dst):
                for u, v in zip(path[1:-1], path[2:]):
                    nexts.setdefault(u, set()).update(
                        p.number for p in t.ports(u)
                        if p.peer == v and (v != t.server_of(dst) or p.peer_port == t.nic_port(dst)[1]))
            s = t.server_of(src)
            if s in nexts and s != t.server_of(dst):   # the sender's server: its NIC of the GPU index
                nexts[s] &= {own_nic(t, s, t.gpu_index(dst))}
            for u, ports in nexts.items():   # every switch on the way: its route, no more, no less
                assert set(t.equal_cost_next_hops(u)[dst]) == ports, (t.name, src, dst, u)
        for sw in t.switches():   # and nowhere does a route enter a server not the destination's
            for dst, ports in t.equal_cost_next_hops(sw).items():
                peers = {p.peer for p in t.ports(sw) if p.number in ports}
                assert all(not t.is_server(v) or v == t.server_of(dst) for v in peers), (t.name, sw, dst)
                assert ports, (t.name, sw, dst)


def test_leaf_spine_and_fat_tree_hang_servers_under_their_leaves():
    t = leaf_spine(2, 2, 4, 10e9, gpus_per_server=2, nvlink_rate_bps=400e9)
    assert len(t.hosts()) == 8 and t.servers() == ["srv1", "srv2", "srv3", "srv4"]
    for h in t.hosts():   # every NIC of a server to its leaf: servers 1, 2 under l1
        assert rail_leaf(t, h) == ("l1" if t.server_of(h) in ("srv1", "srv2") else "l2")
    assert t.params["oversubscription"] == 1.0 and t.oversubscription("l1") == 1.0
    f = fat_tree(4, 10e9, gpus_per_server=2)
    assert len(f.hosts()) == 16 and len(f.servers()) == 8 and len(f.links) == 48 + 16
    # One GPU per server (the default) is the topology of before: no servers.
    assert not leaf_spine(2, 2, 4, 10e9).servers() and leaf_spine(2, 2, 4, 10e9).hosts() == t.hosts()


@pytest.mark.parametrize("kind,params,match", [
    ("rail-optimized", {"servers": 4, "gpus_per_server": 0, "nic_rate_bps": 1e9}, "gpus_per_server must be an integer >= 1"),
    ("rail-optimized", {"servers": 6, "gpus_per_server": 2, "nic_rate_bps": 1e9, "pods": 4},
     r"servers \(6\) must divide evenly into pods \(4\)"),
    ("rail-optimized", {"servers": 4, "gpus_per_server": 2, "nic_rate_bps": 0}, "nic_rate_bps must be a number > 0"),
    ("rail-optimized", {"servers": 4, "gpus_per_server": 2, "nic_rate_bps": 1e9, "spines": 0}, "spines must be"),
    ("leaf-spine", {"leaves": 2, "spines": 1, "hosts_per_leaf": 3, "host_rate_bps": 1e9, "gpus_per_server": 2},
     r"gpus_per_server \(2\) must divide hosts_per_leaf \(3\)"),
    ("leaf-spine", {"leaves": 2, "spines": 1, "hosts_per_leaf": 2, "host_rate_bps": 1e9, "nvlink_rate_bps": 1e12},
     "nvlink_rate_bps applies only with gpus_per_server > 1"),
    ("fat-tree", {"k": 4, "host_rate_bps": 1e9, "gpus_per_server": 3}, r"gpus_per_server \(3\) must divide k/2 \(2\)"),
    ("rail-optimized", {"servers": 2, "gpus_per_server": 2}, "missing required parameter.*nic_rate_bps"),
])
def test_bad_input_names_the_field_and_what_is_allowed(kind, params, match):
    with pytest.raises(TopologyError, match=match):
        build(kind, **params)


INSIDE = {
    "name": "inside", "seed": 1, "time_dilation": 2.0, "byte_scale": 0.0005, "time_limit_s": 30,
    "topology": {"kind": "rail-optimized", "servers": 2, "gpus_per_server": 4, "nic_rate_bps": 10e9,
                 "nvlink_rate_bps": 100e9, "buffer_bytes": 200_000},
    "workload": {"model": "resnet50", "pattern": "ring", "workers": 4, "iterations": 2, "placement": "packed"},
    "transport": {"kind": "auto"},
}


@pytest.mark.parametrize("engine", ["python", "native"])
def test_a_ring_inside_one_server_puts_nothing_on_the_network(engine, tmp_path):
    s, frames = run(parse_spec({**INSIDE, "engine": engine}), SimBackend(), "dlcp", tmp_path, log=lambda *_: None)
    ports = frames["ports"]
    assert s["completed"] and s["iterations_measured"] > 0
    network = ports[ports["role"] == "switch"]
    servers = ports[ports["role"] == "server"]
    assert set(network["switch"]) == {"l1", "l2", "l3", "l4", "s1"}
    assert network["tx_packets"].sum() == 0 and s["link_utilization"] == 0.0
    assert servers[servers["switch"] == "srv1"]["tx_packets"].sum() > 0
    assert servers[servers["switch"] == "srv2"]["tx_packets"].sum() == 0


def test_servers_run_their_own_fifo_under_the_experiment_s_policy_in_both_engines(tmp_path):
    spec = parse_spec({**INSIDE, "workload": {**INSIDE["workload"], "workers": 8}})
    out = {}
    for engine in ("python", "native"):
        s, frames = run(spec.with_field("engine", engine), SimBackend(hosts="python"), "dlcp",
                        tmp_path / engine, log=lambda *_: None)
        out[engine] = ({k: v for k, v in s.items() if k not in WALL_CLOCK_KEYS}, frames["ports"])
        net = frames["hosts"].net
        counters = net.counters()
        assert counters["srv1"]["pipeline"] == PipelineSpec.parse(SERVER_PIPELINE).describe()
        assert counters["l1"]["pipeline"] == PipelineSpec.parse("dlcp").describe()
        # The ring crosses between the two servers on rail 0 (GPU 3 -> GPU 0 of the next).
        ports = frames["ports"]
        used = ports[(ports["role"] == "switch") & (ports["tx_packets"] > 0)]
        assert set(used["switch"]) <= {"l1", "l4"} and "l1" in set(used["switch"])
    assert out["python"][0] == out["native"][0]


def test_packed_ranks_sit_where_the_schedules_layout_puts_them():
    """`placement = "packed"`: rank r on GPU r % G of server r // G (workloads.schedule.layout's
    divmod(rank, gpus_per_server)); `spread` deals ranks over the servers instead."""
    from dlcp_emu.experiment.placement import place
    spec = parse_spec({**INSIDE, "topology": {**INSIDE["topology"], "servers": 4},
                       "workload": {**INSIDE["workload"], "workers": 16}})
    topo = spec.build_topology()
    servers = topo.servers()
    hosts = place(spec, topo).host_of_rank
    assert all((servers.index(topo.server_of(hosts[r])), topo.gpu_index(hosts[r])) == divmod(r, 4)
               for r in range(16))
    spread = place(spec.with_field("workload.placement", "spread"), topo).host_of_rank
    assert [servers.index(topo.server_of(spread[r])) for r in range(8)] == [0, 1, 2, 3, 0, 1, 2, 3]
