"""The background-flow process of one emulated host: `host.background.BackgroundEndpoint`
over UDP in the host's namespace (port BACKGROUND_UDP_PORT).

    python -m dlcp_emu.emu.background_udp --config FILE.json

Config: `host_configs.BackgroundUdpConfig`. Flows go to out_path as JSON lines, as
`background_tcp` writes them: each finished flow within a second of its end, those still
under way when the process stops (SIGTERM too); nothing of a finished flow stays in memory.
"""
import socket
import sys
import time

from dlcp_emu.emu.host_configs import BackgroundUdpConfig
from dlcp_emu.emu.host_process import config_and_stop_flag, wait_for_start
from dlcp_emu.emu.native_host import NativeUdpHost
from dlcp_emu.experiment.engine import choose_engine
from dlcp_emu.emu.udp_driver import UdpDriver
from dlcp_emu.emu.streams import JsonLinesWriter, process_row
from dlcp_emu.host.background import JOB, TRANSPORT, BackgroundEndpoint, flow_rows
from dlcp_emu.transport.settings import TransportSettings


def main(argv=None):
    cfg, stopping = config_and_stop_flag(BackgroundUdpConfig, argv)
    clock = time.monotonic_ns
    peers = {int(i): tuple(a) for i, a in cfg.peers.items()}
    ip_of = {i: a[0] for i, a in peers.items()}
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(tuple(cfg.bind))
    start = wait_for_start(cfg, stopping)
    if start is None:
        return 0
    # Flow start times are relative to the common start; the endpoint runs on the clock.
    flows = [(start + int(t), int(dst), int(n), int(fid)) for t, dst, n, fid in cfg.flows]
    engine, _ = choose_engine(cfg.engine, transport=TRANSPORT)
    ep = BackgroundEndpoint(cfg.index, flows, cfg.mtu, cfg.link_rate_bps, endpoints=engine,
                            settings=TransportSettings(**cfg.transport_settings))
    if engine == "native":
        driver = NativeUdpHost(ep, sock, peers, job=JOB, agent_reads=False,
                               control_first=cfg.host_queue == "priority")
    else:
        driver = UdpDriver(ep, sock, peers, ecn=True, control_first=cfg.host_queue == "priority")
    deadline = start + int(cfg.deadline_s * 1e9)
    next_write = start + 1_000_000_000
    out = JsonLinesWriter(cfg.out_path)

    def stream(started):
        out.append([("flow", r) for r in flow_rows(ep.take_finished(), started, start, ip_of)])

    while not stopping and clock() < deadline:
        driver.serve(min(next_write, deadline), stopping)
        now = clock()
        if now >= next_write:
            stream({})
            next_write = now + 1_000_000_000
    stream(ep.started)
    out.append([process_row()])
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
