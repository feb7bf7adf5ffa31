"""The twin surfaces are protocols, and every twin has its protocol's every member: the
backends (`experiment.backend.Backend`), the endpoints (`transport.endpoint`), the simulator's
network and loop (`sim.network.Network`, `sim.events.Loop`) and a host process's data plane
(`emu.driver.HostDriver`). A member taken out of a twin fails here, not in the other backend."""
import socket

import pytest

from dlcp_emu.emu.driver import HostDriver
from dlcp_emu.emu.native_host import NativeUdpHost
from dlcp_emu.emu.run import EmuBackend
from dlcp_emu.emu.udp_driver import UdpDriver
from dlcp_emu.experiment.backend import Backend
from dlcp_emu.experiment.spec import parse_spec
from dlcp_emu.host.background import BackgroundEndpoint
from dlcp_emu.host.packet_log import PacketLog
from dlcp_emu.host.stack import HostStack
from dlcp_emu.sim.events import EventLoop, Loop
from dlcp_emu.sim.native import NativeLoop, NativeSimNetwork
from dlcp_emu.sim.network import Network, SimNetwork
from dlcp_emu.sim.run import SimBackend, build
from dlcp_emu.transport import DlcpReceiver, DlcpSender, ReliableReceiver, ReliableSender, native
from dlcp_emu.transport.endpoint import Endpoint, ReceiverEndpoint, SenderEndpoint

from test_experiments_sim import TINY


def members(proto):
    """The protocol's own members (methods, properties and annotated attributes), read from
    its class bodies as isinstance does (Python 3.13's typing.get_protocol_members)."""
    out = set()
    for cls in proto.__mro__[:-1]:
        if cls.__name__ in ("Protocol", "Generic"):
            continue
        out |= {k for k in (*vars(cls), *getattr(cls, "__annotations__", {}))
                if not k.startswith("_")}
    return out


def without(obj, name):
    """A stand-in of obj's class lacking one member: the protocol must refuse it."""
    attrs = {k: v for cls in reversed(type(obj).__mro__) for k, v in vars(cls).items()
             if k not in ("__dict__", "__weakref__")}
    attrs.pop(name, None)
    lacking = type(f"{type(obj).__name__}Without_{name}", (), attrs)
    out = object.__new__(lacking)
    out.__dict__.update({k: v for k, v in vars(obj).items() if k != name})
    return out


def held_to(proto, obj):
    """obj satisfies proto, and would not with any one of the protocol's members missing."""
    assert isinstance(obj, proto), f"{type(obj).__name__} is not a {proto.__name__}"
    for name in members(proto):
        assert not isinstance(without(obj, name), proto), f"{proto.__name__} does not ask for {name}"
    return True


def test_both_backends_are_backends():
    assert members(Backend) == {"name", "transport", "execute", "summarize", "close"}
    assert held_to(Backend, SimBackend())
    assert held_to(Backend, EmuBackend())
    assert {SimBackend.name, EmuBackend.name} == {"simulation", "emulation"}


@pytest.mark.parametrize("way", ["python", "native"])
def test_senders_and_receivers_of_both_engines_are_endpoints(way):
    senders = (DlcpSender, ReliableSender) if way == "python" else (native.DlcpSender, native.ReliableSender)
    receivers = (DlcpReceiver, ReliableReceiver) if way == "python" else (native.DlcpReceiver,
                                                                          native.ReliableReceiver)
    assert {"send", "take_completed", "pending", "receive", "poll", "next_timeout"} <= members(SenderEndpoint)
    for cls in senders:
        assert held_to(SenderEndpoint, cls(0, 1, job=0, mtu=1500))
    for cls in receivers:
        assert held_to(ReceiverEndpoint, cls(1, mtu=1500))


@pytest.mark.parametrize("hosts", ["python", "core"])
def test_what_the_simulator_drives_keeps_its_surfaces(hosts):
    """A run's network, loop, host stacks and background endpoints, as `sim.run.build`
    makes them, on either engine."""
    spec = parse_spec({**TINY, "engine": "python" if hosts == "python" else "native"})
    _, _, net, sim_hosts = build(spec, "fifo", hosts=hosts)
    assert isinstance(net, SimNetwork if hosts == "python" else NativeSimNetwork)
    assert isinstance(net.loop, EventLoop if hosts == "python" else NativeLoop)
    assert held_to(Network, net) and held_to(Loop, net.loop)
    stacks = list(sim_hosts.stacks.values())   # with packet records, PacketLogs around them
    assert stacks and all(isinstance(s, Endpoint) for s in stacks)
    inner = [s.endpoint if isinstance(s, PacketLog) else s for s in stacks]
    assert all(isinstance(s, HostStack) for s in inner) and held_to(Endpoint, inner[0])
    assert sim_hosts.background and held_to(Endpoint, next(iter(sim_hosts.background.values())))


@pytest.mark.parametrize("engine", ["python", "native"])
def test_both_host_data_planes_are_host_drivers(engine):
    """A background endpoint on a loopback UDP socket, as background_udp drives it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    peers = {0: sock.getsockname()}
    ep = BackgroundEndpoint(0, [], 1500, 10e9, endpoints=engine)
    try:
        if engine == "native":
            driver = NativeUdpHost(ep, sock, peers, job=1, agent_reads=False, signals=False)
        else:
            driver = UdpDriver(ep, sock, peers, ecn=True)
        assert held_to(HostDriver, driver)
        if engine == "native":
            driver.close()
    finally:
        sock.close()
