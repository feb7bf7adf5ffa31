"""Each process's config is one class that the runner writes and the process reads: what is
read equals what was written, and a file of another version (a field more or less) is refused
naming the field. The configs are the ones the runner builds for the tiny spec."""
import json
import subprocess
import sys

import pytest

from dlcp_emu.emu.datapath.config import ConfigError, SwitchProcessConfig
from dlcp_emu.emu.host_configs import BackgroundTcpConfig, BackgroundUdpConfig, HostProcessConfig
from dlcp_emu.emu.mnswitch import DERIVED, OPTIONS, flood_ports, switch_routes
from dlcp_emu.emu.run_configs import background_config, host_config
from dlcp_emu.experiment.background import background_flows
from dlcp_emu.experiment.placement import place
from dlcp_emu.experiment.topology import scaled_topology
from dlcp_emu.experiment.spec import parse_spec

from test_experiments_sim import TINY


def _files(tmp_path):
    return {"ready_file": str(tmp_path / "r"), "start_file": str(tmp_path / "s"), "deadline_s": 30.0,
            "out_path": str(tmp_path / "o"), "cpus": [0], "nice": -10}


def switch_config(spec):
    topo = scaled_topology(spec)
    ports = [{"number": p.number, "intf": topo.intf_name("l1", p.number), "rate_bps": p.link.rate_bps,
              "delay_ns": 0, "buffer_bytes": 262144, "peer_paced": True} for p in topo.ports("l1")]
    return SwitchProcessConfig(name="l1", ports=ports, routes=switch_routes(topo, "l1"),
                               flood=flood_ports(topo)["l1"], pipeline={"preset": "dlcp", "queues": 4},
                               stats_path="l1.stats.json", queue_path="l1.queues.i64", cpu=1,
                               rt_priority=10, engine="native", wake_period_ns=5000)


def host_configs(spec, tmp_path):
    topo = scaled_topology(spec)
    placement = place(spec, topo)
    return [host_config(spec, placement, topo, rank, "dlcp", records_path=str(tmp_path / "rec"),
                        samples_path=None, packets_path=str(tmp_path / "p"), **_files(tmp_path))
            for rank in placement.host_of_rank]


def background_configs(spec, tmp_path):
    topo = scaled_topology(spec)
    flows = background_flows(spec, topo)
    return [background_config(spec, topo, h, flows[h], **_files(tmp_path)) for h in topo.hosts()]


def every_config(tmp_path):
    """One config of each class, as the runner builds them for the tiny spec (a parameter
    server variant, with [training], for the host; TCP background for BackgroundTcpConfig)."""
    spec = parse_spec(TINY)
    ps = parse_spec({**{k: v for k, v in TINY.items() if k != "background"}, "byte_scale": 1.0,
                     "workload": {"pattern": "ps", "workers": 3, "ps": 1, "iterations": 2},
                     "training": {"hidden": [8]}})
    tcp = parse_spec({**TINY, "background": {"load": 0.1, "transport": "tcp"}})
    return [switch_config(spec), *host_configs(spec, tmp_path), *host_configs(ps, tmp_path),
            *background_configs(spec, tmp_path), *background_configs(tcp, tmp_path)]


def test_every_process_config_reads_back_equal_to_what_was_written(tmp_path):
    configs = every_config(tmp_path)
    assert {type(c) for c in configs} == {SwitchProcessConfig, HostProcessConfig, BackgroundUdpConfig,
                                          BackgroundTcpConfig}
    assert any(c.role == "ps" for c in configs if isinstance(c, HostProcessConfig))
    assert any(c.flows for c in configs if isinstance(c, (BackgroundUdpConfig, BackgroundTcpConfig)))
    for k, cfg in enumerate(configs):
        path = tmp_path / f"{k}.config.json"
        cfg.write(path, indent=None if k % 2 else 1)
        assert type(cfg).read(path) == cfg, type(cfg).__name__


@pytest.mark.parametrize("kind", [SwitchProcessConfig, HostProcessConfig, BackgroundUdpConfig,
                                  BackgroundTcpConfig])
def test_a_config_of_another_version_is_refused_naming_the_field(tmp_path, kind):
    (cfg,) = [c for c in every_config(tmp_path) if type(c) is kind][:1]
    data = json.loads(json.dumps(cfg.to_json()))
    with pytest.raises(ConfigError, match=rf"{kind.__name__}: unknown field\(s\) \['rx_batchsize'\]"):
        kind.from_json({**data, "rx_batchsize": 8})
    dropped = kind.field_names()[-1]          # one with a default: the class alone would fill it
    with pytest.raises(ConfigError, match=rf"{kind.__name__}: missing field\(s\) \['{dropped}'\]"):
        kind.from_json({k: v for k, v in data.items() if k != dropped})
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(ConfigError, match="a config is a JSON object, got list"):
        kind.read(tmp_path / "list.json")


def test_a_bad_switch_value_read_from_a_file_is_named():
    data = json.loads(json.dumps(switch_config(parse_spec(TINY)).to_json()))
    with pytest.raises(ConfigError, match="rx_batch must be an integer >= 1, got 0"):
        SwitchProcessConfig.from_json({**data, "rx_batch": 0})


def test_every_switch_config_field_is_derived_by_the_switch_node_or_an_option_of_it():
    """DlcpSwitch fills DERIVED from its interfaces, topology and run directory, and takes
    every other field as an option by the same name."""
    assert set(DERIVED) <= set(SwitchProcessConfig.field_names())   # none renamed behind its back
    # Mininet hands a switch with batchStartup batch=True itself: an option of that name
    # would be taken for it.
    assert "batch" not in OPTIONS and "rx_batch" in OPTIONS


@pytest.mark.parametrize("program, kind", [("dlcp_emu.emu.datapath", SwitchProcessConfig),
                                           ("dlcp_emu.emu.hostd", HostProcessConfig),
                                           ("dlcp_emu.emu.background_udp", BackgroundUdpConfig),
                                           ("dlcp_emu.emu.background_tcp", BackgroundTcpConfig)])
def test_a_process_given_an_older_config_says_which_field_and_exits(tmp_path, program, kind):
    """A field renamed since (the switch's batch, now rx_batch): the process stops before it
    starts anything, naming both."""
    (cfg,) = [c for c in every_config(tmp_path) if type(c) is kind][:1]
    data = cfg.to_json()
    data["batch"] = data.pop(kind.field_names()[-1])
    (tmp_path / "old.json").write_text(json.dumps(data))
    r = subprocess.run([sys.executable, "-m", program, "--config", str(tmp_path / "old.json")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert f"{kind.__name__}: unknown field(s) ['batch']" in r.stderr, r.stderr


def test_a_schedules_host_derives_the_program_the_simulator_runs(tmp_path):
    """A schedule's [workload] and its ranks' servers reach each host process in its config
    (written and read back as the runner and hostd do); the host derives the rank's program
    equal to the run's set-up's, hierarchical groups included: ranks placed `spread` share
    servers 0-4, 1-5, ... (not blocks of gpus_per_server): a DP group of four spans two servers,
    not four."""
    from dlcp_emu.emu.hostd import build_schedule_agent
    from dlcp_emu.experiment.run import prepare
    from dlcp_emu.sim.run import SimBackend
    spec = parse_spec({
        "name": "x", "byte_scale": 1e-3,
        "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 4, "host_rate_bps": 1e10,
                     "gpus_per_server": 2},
        "workload": {"kind": "llm", "model": "gpt3-1.3b", "layers": 2, "workers": 8, "placement": "spread",
                     "algorithms": {"all-reduce": "hierarchical"},
                     "parallelism": {"dp": 4, "tp": 2, "seq_len": 256}}})
    setup = prepare(spec, SimBackend(), "fifo")
    for cfg in host_configs(spec, tmp_path):
        cfg.write(tmp_path / "c.json")
        read = HostProcessConfig.read(tmp_path / "c.json")
        assert read.servers == [0, 1, 2, 3, 0, 1, 2, 3]
        plan, agent = build_schedule_agent(read)
        assert agent.p == setup.plan.programs[read.rank]
        assert plan.n_messages == setup.plan.n_messages


@pytest.mark.parametrize("kind", [HostProcessConfig, BackgroundUdpConfig])
def test_a_host_queue_the_hosts_do_not_have_is_refused_naming_the_allowed_ones(tmp_path, kind):
    (cfg,) = [c for c in every_config(tmp_path) if type(c) is kind][:1]
    data = json.loads(json.dumps(cfg.to_json()))
    assert kind.from_json({**data, "host_queue": "priority"}).host_queue == "priority"
    with pytest.raises(ConfigError, match=rf"{kind.__name__}: host_queue must be one of fifo, priority, got 'lifo'"):
        kind.from_json({**data, "host_queue": "lifo"})
