"""topologies/: builders, route tables, port numbering against Mininet's Topo, addresses,
exports and every error path. Pure Python: mininet.topo.Topo needs no root."""
import json

import pytest

from topologies import (
    DEFAULT_BUFFER_BYTES,
    Link,
    Node,
    Topology,
    TopologyError,
    build,
    builder_params,
    dumbbell,
    fat_tree,
    leaf_spine,
    leaf_spine_uplink_rate,
    star,
)

G = 10**9


def counts(t):
    return len(t.hosts()), len(t.switches()), len(t.links)


# ---- node / link counts ------------------------------------------------------------------

def test_star_counts_and_ports():
    t = star(5, G)
    assert counts(t) == (5, 1, 5)
    assert [(p, peer) for p, peer, _ in t.port_map()["s1"]] == [(i, f"h{i}") for i in range(1, 6)]
    assert t.links[0].buffer_bytes == DEFAULT_BUFFER_BYTES == 256 * 1024


def test_dumbbell_counts_rates_and_bottleneck_port():
    t = dumbbell(3, 10 * G, G, delay_ns=1000, bottleneck_delay_ns=5000,
                 bottleneck_buffer_bytes=100_000)
    assert counts(t) == (6, 2, 7)
    neck = t.links[-1]
    assert (neck.a, neck.b, neck.rate_bps, neck.delay_ns, neck.buffer_bytes) == \
        ("s1", "s2", G, 5000, 100_000)
    assert t.links[0].rate_bps == 10 * G and t.links[0].delay_ns == 1000
    assert t.ports_to("s1", "s2") == (4,) and t.ports_to("s2", "s1") == (4,)
    assert t.attached_switch("h4") == ("s2", 1)
    assert t.equal_cost_next_hops("s1") == {"h1": (1,), "h2": (2,), "h3": (3,),
                                            "h4": (4,), "h5": (4,), "h6": (4,)}
    assert t.hop_count("h1", "h6") == 3 and t.hop_count("h1", "h2") == 2


@pytest.mark.parametrize("leaves,spines,hpl", [(2, 2, 2), (4, 3, 5), (1, 1, 1)])
def test_leaf_spine_counts(leaves, spines, hpl):
    t = leaf_spine(leaves, spines, hpl, G)
    assert counts(t) == (leaves * hpl, leaves + spines, leaves * hpl + leaves * spines)
    assert sum(n.role == "leaf" for n in t.nodes) == leaves
    assert sum(n.role == "spine" for n in t.nodes) == spines


@pytest.mark.parametrize("k", [2, 4, 6, 8])
def test_fat_tree_counts(k):
    t = fat_tree(k, G)
    half = k // 2
    assert len(t.hosts()) == k**3 // 4
    assert len(t.switches()) == k * k + half * half     # k*half edge + k*half agg + half^2 core
    assert len(t.links) == 3 * k**3 // 4                # host, edge-agg, agg-core layers
    for s, ports in t.port_map().items():
        assert len(ports) == k, s                       # every switch has k ports


def test_fat_tree_k4_exact():
    t = fat_tree(4, G)
    assert counts(t) == (16, 20, 48)
    roles = [n.role for n in t.nodes if n.kind == "switch"]
    assert (roles.count("edge"), roles.count("agg"), roles.count("core")) == (8, 8, 4)
    assert t.node("h5").pod == 1 and t.node("e3").pod == 1 and t.node("c1").pod is None


def test_fat_tree_k16_counts_routes_and_paths():
    # (How long building it takes is a figure of `dlcp-emu bench sim`.)
    t = fat_tree(16, 100 * G)
    assert counts(t) == (1024, 320, 3072)
    routes = t.equal_cost_next_hops("e1")
    assert len(routes) == 1024
    assert t.count_paths("h1", "h1024") == 64


# ---- route tables (equal-cost next hops) and paths ---------------------------------------

def test_leaf_spine_next_hops():
    t = leaf_spine(3, 4, 2, G)
    r = t.equal_cost_next_hops("l1")
    assert r["h1"] == (1,) and r["h2"] == (2,)          # local hosts: the one host port
    assert r["h3"] == (3, 4, 5, 6)                      # remote: every spine uplink
    assert len(r["h6"]) == 4
    # a spine has exactly one way down to each host: the port of the host's leaf
    assert t.equal_cost_next_hops("s2") == {f"h{i}": ((i - 1) // 2 + 1,) for i in range(1, 7)}
    assert t.count_paths("h1", "h3") == 4 and len(t.paths("h1", "h3")) == 4
    assert t.paths("h1", "h2") == [("h1", "l1", "h2")]
    assert t.paths("h1", "h1") == [("h1",)]


def test_fat_tree_k4_next_hops_and_paths():
    k, half = 4, 2
    t = fat_tree(k, G)
    e1 = t.equal_cost_next_hops("e1")
    assert e1["h1"] == (1,) and e1["h2"] == (2,)
    assert e1["h3"] == (3, 4)                           # other edge, same pod: both aggs
    assert all(e1[f"h{i}"] == (3, 4) for i in range(5, 17))   # other pods: 2 uplinks
    a1 = t.equal_cost_next_hops("a1")
    assert a1["h1"] == (1,) and a1["h3"] == (2,)        # down inside its pod
    assert a1["h16"] == (3, 4)                          # up to its two cores
    c1 = t.equal_cost_next_hops("c1")
    assert c1["h1"] == (1,) and c1["h16"] == (4,)       # core port p+1 leads to pod p
    assert t.count_paths("h1", "h16") == half * half == len(t.paths("h1", "h16"))
    assert t.count_paths("h1", "h3") == half
    assert t.count_paths("h1", "h2") == 1
    for p in t.paths("h1", "h16"):
        assert len(p) == 7 and p[0] == "h1" and p[-1] == "h16"
        assert all(b in t.neighbors(a) for a, b in zip(p, p[1:]))
    assert len(set(t.paths("h1", "h16"))) == 4


@pytest.mark.parametrize("topo", [leaf_spine(3, 2, 2, G, oversubscription=2.0), fat_tree(4, G),
                                  dumbbell(2, G, G)], ids=["leaf-spine", "fat-tree", "dumbbell"])
def test_next_hops_are_exactly_the_shortest_path_first_hops(topo):
    """Every switch's route table, for every host, is exactly the set of ports by which the
    enumerated shortest host-to-host paths leave that switch: no port missing, none extra."""
    t = topo
    from_paths = {s: {} for s in t.switches()}
    for src in t.hosts():
        for dst in t.hosts():
            for path in t.paths(src, dst) if src != dst else ():
                for u, v in zip(path[1:-1], path[2:]):
                    from_paths[u].setdefault(dst, set()).update(t.ports_to(u, v))
    tables = {s: {dst: set(ports) for dst, ports in t.equal_cost_next_hops(s).items()}
              for s in t.switches()}
    assert tables == from_paths


def test_parallel_links_give_parallel_ports():
    nodes = [Node("h1", "host"), Node("h2", "host"), Node("x1", "switch"), Node("x2", "switch")]
    links = [Link("h1", "x1", G), Link("x1", "x2", G), Link("x1", "x2", G), Link("x2", "h2", G)]
    t = Topology("par", nodes, links)
    assert t.equal_cost_next_hops("x1")["h2"] == (2, 3)
    assert t.neighbors("x1") == ["h1", "x2"]
    assert t.paths("h1", "h2") == [("h1", "x1", "x2", "h2")]
    assert t.to_mininet_topo().port("x1", "x2") == [(2, 1), (3, 2)]


# ---- port numbering agrees with Mininet ------------------------------------------------

@pytest.mark.parametrize("topo", [
    star(4, G), dumbbell(2, G, G), leaf_spine(3, 2, 3, G, oversubscription=3.0),
    fat_tree(4, G), fat_tree(6, G)], ids=lambda t: t.name)
def test_ports_match_mininet_topo(topo):
    mt = topo.to_mininet_topo()
    assert mt.topology is topo
    assert sorted(mt.switches()) == sorted(topo.switches())
    assert sorted(mt.hosts()) == sorted(topo.hosts())
    assert len(mt.links()) == len(topo.links)
    for sw, ports in topo.port_map().items():
        assert [p for p, _, _ in ports] == list(range(1, len(ports) + 1))
        for port, peer, link in ports:
            peer_port = next(q.peer_port for q in topo.ports(sw) if q.number == port)
            assert mt.port(sw, peer) == (port, peer_port)
            info = mt.linkInfo(sw, peer)
            assert {k: info[k] for k in ("rate_bps", "delay_ns", "buffer_bytes")} == \
                link.params()
            assert "bw" not in info and "delay" not in info   # the switch paces, not tc
    for h in topo.hosts():
        sw, sp = topo.attached_switch(h)
        assert mt.port(h, sw) == (0, sp)                      # hosts: h-eth0
        assert mt.nodeInfo(h)["ip"] == topo.host_ip(h) + "/8"
        assert mt.nodeInfo(h)["mac"] == topo.host_mac(h)
    dpids = [mt.nodeInfo(s)["dpid"] for s in mt.switches()]
    assert len(set(dpids)) == len(dpids)


def test_mininet_topo_options():
    t = leaf_spine(2, 2, 1, G)
    mt = t.to_mininet_topo(switch_opts={"foo": 1}, host_opts={"ip": "1.2.3.4/8", "bar": 2},
                           link_opts={"baz": 3})
    assert mt.nodeInfo("l1")["foo"] == 1
    assert mt.nodeInfo("h1")["bar"] == 2
    assert mt.nodeInfo("h1")["ip"] == "10.0.0.1/8"      # ours win: routes must match hosts
    assert mt.linkInfo("l1", "s1")["baz"] == 3


def test_interface_names_fit_linux_limit():
    t = fat_tree(16, G)
    for n in t.nodes:
        last = t.ports(n.name)[-1].number
        assert len(t.intf_name(n.name, last)) <= 15


# ---- addresses -------------------------------------------------------------------------

def test_host_ip_mac_unique_for_1024_hosts():
    t = fat_tree(16, G)
    hosts = t.hosts()
    ips = [t.host_ip(h) for h in hosts]
    macs = [t.host_mac(h) for h in hosts]
    assert len(set(ips)) == len(set(macs)) == 1024
    assert t.host_ip("h1") == "10.0.0.1" and t.host_mac("h1") == "00:00:00:00:00:01"
    assert t.host_ip("h255") == "10.0.0.255"
    assert t.host_ip("h256") == "10.0.1.0" and t.host_mac("h256") == "00:00:00:00:01:00"
    assert t.host_ip("h300") == "10.0.1.44" and t.host_mac("h300") == "00:00:00:00:01:2c"
    assert t.host_ip("h1024", with_prefix=True) == "10.0.4.0/8"
    assert all(t.host_index(h) == int(h[1:]) for h in hosts)   # hN is host N
    assert all(t.host_by_ip(ip) == h and t.host_by_mac(m) == h
               for h, ip, m in zip(hosts, ips, macs))


# ---- oversubscription ----------------------------------------------------------------

def test_oversubscription_math():
    t = leaf_spine(4, 2, 8, 10 * G, oversubscription=4.0)
    # 8 * 10G down / (2 spines * uplink) = 4  ->  uplink = 10G
    assert t.params["uplink_rate_bps"] == 10 * G
    assert t.oversubscription("l1") == pytest.approx(4.0)
    assert leaf_spine_uplink_rate(8, 10 * G, 2, 4.0) == 10 * G
    t = leaf_spine(2, 4, 4, 25 * G)                         # default: non-blocking
    assert t.params["uplink_rate_bps"] == 25 * G and t.oversubscription("l2") == 1.0
    t = leaf_spine(2, 2, 6, 10 * G, uplink_rate_bps=20 * G)
    assert t.params["oversubscription"] == pytest.approx(1.5)
    assert t.oversubscription("l1") == pytest.approx(1.5)
    assert fat_tree(4, G).oversubscription("e1") == 1.0
    with pytest.raises(ValueError, match="both"):
        t.oversubscription("s1")                            # spine has no hosts


# ---- exports -----------------------------------------------------------------------------

def test_to_dict_round_trip_and_adjacency():
    t = leaf_spine(2, 2, 2, G, delay_ns=500)
    d = json.loads(json.dumps(t.to_dict()))
    assert Topology.from_dict(d) == t
    h1 = next(n for n in d["nodes"] if n["name"] == "h1")
    assert h1["ip"] == "10.0.0.1" and h1["kind"] == "host"
    assert d["params"]["topology"] == "leaf-spine"
    adj = t.adjacency()
    assert [e["peer"] for e in adj["l1"]] == ["h1", "h2", "s1", "s2"]
    assert adj["l1"][2] == {"port": 3, "peer": "s1", "peer_port": 1, "rate_bps": G,
                           "delay_ns": 500, "buffer_bytes": DEFAULT_BUFFER_BYTES}
    assert adj["h1"] == [{"port": 0, "peer": "l1", "peer_port": 1, "rate_bps": G,
                          "delay_ns": 500, "buffer_bytes": DEFAULT_BUFFER_BYTES}]


# ---- registry and error paths ----------------------------------------------------------

def test_registry_builds_each():
    assert counts(build("star", hosts=3, host_rate_bps=G)) == (3, 1, 3)
    assert counts(build("dumbbell", hosts_per_side=2, host_rate_bps=G,
                        bottleneck_rate_bps=G)) == (4, 2, 5)
    assert counts(build("leaf-spine", leaves=2, spines=2, hosts_per_leaf=2,
                        host_rate_bps=G)) == (4, 4, 8)
    assert counts(build("fat-tree", k=4, host_rate_bps=G)) == (16, 20, 48)
    assert build("fat_tree", k=2, host_rate_bps=1e9) == fat_tree(2, G)   # alias, float from JSON
    assert builder_params("star")["buffer_bytes"] == DEFAULT_BUFFER_BYTES


def test_unknown_topology_lists_known():
    with pytest.raises(ValueError, match=r"unknown topology 'ring'.*star, dumbbell, "
                                         r"leaf-spine, fat-tree"):
        build("ring")
    with pytest.raises(ValueError, match="known: star"):
        builder_params("ring")


def test_unknown_and_missing_parameters():
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) pods; allowed: k, host_rate_bps, "
                                         r"delay_ns, buffer_bytes"):
        build("fat-tree", k=4, host_rate_bps=G, pods=4)
    with pytest.raises(ValueError, match=r"missing required parameter\(s\) host_rate_bps"):
        build("fat-tree", k=4)


@pytest.mark.parametrize("call,match", [
    (lambda: fat_tree(3, G), r"fat-tree: k must be an even integer >= 2, got 3"),
    (lambda: fat_tree(0, G), r"k must be an even integer >= 2, got 0"),
    (lambda: fat_tree(True, G), r"k must be an even integer >= 2"),
    (lambda: fat_tree(4, -1), r"fat-tree: host_rate_bps must be a number > 0 \(bit/s\), got -1"),
    (lambda: fat_tree(4, float("nan")), r"host_rate_bps must be a number > 0"),
    (lambda: fat_tree(4, "10G"), r"host_rate_bps must be a number > 0"),
    (lambda: fat_tree(4, 0.3), r"host_rate_bps must be >= 1 bit/s"),
    (lambda: star(0, G), r"star: hosts must be an integer >= 1, got 0"),
    (lambda: star(2.5, G), r"hosts must be an integer >= 1, got 2.5"),
    (lambda: star(2, G, delay_ns=-5), r"star: delay_ns must be an integer >= 0 \(ns\), got -5"),
    (lambda: star(2, G, buffer_bytes=100),
     r"buffer_bytes must be an integer >= 1514 \(bytes, one full frame\), got 100"),
    (lambda: dumbbell(0, G, G), r"dumbbell: hosts_per_side must be an integer >= 1"),
    (lambda: dumbbell(1, G, 0), r"dumbbell: bottleneck_rate_bps must be a number > 0"),
    (lambda: dumbbell(1, 0, G), r"dumbbell: host_rate_bps must be a number > 0"),
    (lambda: dumbbell(1, G, G, bottleneck_delay_ns=-1), r"bottleneck_delay_ns must be"),
    (lambda: dumbbell(1, G, G, bottleneck_buffer_bytes=0), r"bottleneck_buffer_bytes must be"),
    (lambda: leaf_spine(0, 2, 2, G), r"leaf-spine: leaves must be an integer >= 1, got 0"),
    (lambda: leaf_spine(2, 0, 2, G), r"leaf-spine: spines must be an integer >= 1, got 0"),
    (lambda: leaf_spine(2, 2, 0, G), r"leaf-spine: hosts_per_leaf must be an integer >= 1"),
    (lambda: leaf_spine(2, 2, 2, -G), r"leaf-spine: host_rate_bps must be a number > 0"),
    (lambda: leaf_spine(2, 2, 2, G, oversubscription=0),
     r"leaf-spine: oversubscription must be a number > 0 \(1.0 = non-blocking\), got 0"),
    (lambda: leaf_spine(2, 2, 2, G, oversubscription=-2.0), r"oversubscription must be"),
    (lambda: leaf_spine(2, 2, 2, G, oversubscription=float("inf")), r"oversubscription must"),
    (lambda: leaf_spine(2, 2, 2, G, uplink_rate_bps=0), r"uplink_rate_bps must be a number > 0"),
    (lambda: leaf_spine(2, 2, 2, G, oversubscription=2, uplink_rate_bps=G),
     r"give oversubscription or uplink_rate_bps, not both"),
    (lambda: leaf_spine(1, 1, 1, 1, oversubscription=1e6),
     r"uplink_rate_bps \(derived from oversubscription\) must be >= 1 bit/s"),
])
def test_bad_values_name_field_and_range(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_model_validation_errors():
    h, s = Node("h1", "host"), Node("x1", "switch")
    with pytest.raises(TopologyError, match="kind must be one of"):
        Node("h1", "router")
    with pytest.raises(TopologyError, match="node name 'h-1' must match"):
        Node("h-1", "host")
    with pytest.raises(TopologyError, match="node name '' must match"):
        Node("", "host")
    with pytest.raises(TopologyError, match="two different ends"):
        Link("x1", "x1", G)
    with pytest.raises(TopologyError, match="link h1-x1: rate_bps must be a number > 0"):
        Link("h1", "x1", 0)
    with pytest.raises(TopologyError, match="link h1-x1: delay_ns must be an integer >= 0"):
        Link("h1", "x1", G, delay_ns=1.5)
    with pytest.raises(TopologyError, match="link h1-x1: buffer_bytes must be an integer >= 1514"):
        Link("h1", "x1", G, buffer_bytes=1000)
    with pytest.raises(TopologyError, match="duplicate node name 'h1'"):
        Topology("t", [h, h, s], [Link("h1", "x1", G)])
    with pytest.raises(TopologyError, match="unknown node 'x9'"):
        Topology("t", [h, s], [Link("h1", "x9", G)])
    with pytest.raises(TopologyError, match="host h1 must have exactly one link, to a switch"):
        Topology("t", [h, s], [Link("h1", "x1", G), Link("h1", "x1", G)])
    with pytest.raises(TopologyError, match="host h1 must have exactly one link"):
        Topology("t", [h, Node("h2", "host")], [Link("h1", "h2", G)])
    with pytest.raises(TopologyError, match="not connected"):
        Topology("t", [h, s, Node("x2", "switch"), Node("h2", "host")],
                 [Link("h1", "x1", G), Link("h2", "x2", G)])
    with pytest.raises(TopologyError, match="longer than 15 characters"):
        Topology("t", [Node("averyveryverylongname", "host"), s],
                 [Link("averyveryverylongname", "x1", G)])
    with pytest.raises(TopologyError, match="nodes must be Node objects"):
        Topology("t", ["h1"], [])
    t = star(2, G)
    with pytest.raises(KeyError, match="not a switch"):
        t.equal_cost_next_hops("h1")
    with pytest.raises(KeyError, match="not a host"):
        t.host_ip("s1")
    with pytest.raises(KeyError, match="not a host"):
        t.paths("h1", "s1")
    with pytest.raises(KeyError, match="no node 'zz'"):
        t.neighbors("zz")


@pytest.mark.parametrize("kind, old, params", [
    ("star", "rate_bps", {"hosts": 3}), ("fat-tree", "rate_bps", {"k": 4}),
    ("dumbbell", "edge_rate_bps", {"hosts_per_side": 2, "bottleneck_rate_bps": G})])
def test_every_topology_calls_its_host_links_rate_host_rate_bps_and_takes_the_old_name_with_a_warning(
        kind, old, params):
    from topologies import RenamedParameterWarning
    assert "host_rate_bps" in builder_params(kind) and old not in builder_params(kind)
    with pytest.warns(RenamedParameterWarning, match=f"{kind}: {old} is now called host_rate_bps"):
        t = build(kind, **params, **{old: G})
    assert t == build(kind, **params, host_rate_bps=G)
    with pytest.raises(TopologyError, match=f"{kind}: give host_rate_bps, not both host_rate_bps and {old}"):
        build(kind, **params, host_rate_bps=G, **{old: G})


def test_the_command_line_says_an_old_name_in_one_line(tmp_path):
    import subprocess
    import sys
    spec = tmp_path / "old.toml"
    spec.write_text('name = "old"\n[topology]\nkind = "star"\nhosts = 2\nrate_bps = 1e9\n'
                    '[workload]\nmodel = "resnet50"\nworkers = 2\n')
    r = subprocess.run([sys.executable, "-m", "dlcp_emu.cli", "simulate", str(spec), "--dry-run"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("dlcp-emu: warning: star: rate_bps is now called host_rate_bps")
    assert r.stderr.count("\n") == 1, r.stderr
