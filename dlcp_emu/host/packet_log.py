"""Per-packet records of an endpoint: every packet it sends and receives, bounded.

`PacketLog(endpoint)` has the endpoint's own surface (receive, poll, next_timeout, ...)
and passes everything through, keeping one row a packet. The runner joins a run's send and
receive rows on the packet's identity (source, destination, type, iteration, tensor,
chunk, send timestamp: a retransmission has its own) to give each packet its fate:
delivered, trimmed (payload cut on the way), lost, or in flight (still in the network when
the run ended: the simulator knows which). The simulator also says where and why each lost
packet was dropped.
"""
import pandas as pd

from dlcp_emu.wire import FRAME_OVERHEAD, Flags

MAX_RECORDS = 500_000
COLUMNS = ["src", "dst", "type", "iteration", "tensor_id", "chunk", "send_ts_ns", "flags",
           "priority", "mag_class", "size"]


class PacketLog:
    def __init__(self, endpoint, max_records=MAX_RECORDS):
        self.endpoint = endpoint
        self.sent, self.received = [], []
        self.max_records = max_records
        self.overflow = 0

    def __getattr__(self, name):          # start, done, agent, deliveries, ...
        return getattr(self.endpoint, name)

    @staticmethod
    def _row(h, payload_len):
        return (h.src_rank, h.dst_rank, int(h.type), h.iteration, h.tensor_id, h.chunk_index,
                h.send_ts_ns, int(h.flags), h.priority, h.mag_class, FRAME_OVERHEAD + payload_len)

    def receive(self, h, payload, now, ce=False):
        if len(self.received) < self.max_records:
            self.received.append((*self._row(h, len(payload)), now, bool(ce)))
        else:
            self.overflow += 1
        self.endpoint.receive(h, payload, now, ce)

    def poll(self, now):
        out = self.endpoint.poll(now)
        room = self.max_records - len(self.sent)
        self.sent.extend(self._row(h, len(p)) for h, p in out[:max(0, room)])
        self.overflow += max(0, len(out) - max(0, room))
        return out

    def next_timeout(self):
        return self.endpoint.next_timeout()

    def records(self):
        return {"sent": self.sent, "received": self.received, "overflow": self.overflow}


KEY = ["src", "dst", "type", "iteration", "tensor_id", "chunk", "send_ts_ns"]


def packet_key(h):
    """A packet's identity, from its header, as the table joins on it."""
    return (h.src_rank, h.dst_rank, int(h.type), h.iteration, h.tensor_id, h.chunk_index, h.send_ts_ns)


def _rows(parts, columns):
    """One frame of the rows of every host: each a list of tuples (records()) or a frame with
    those columns already (read back from a host's parquet file: no rebuilding row by row)."""
    frames = [p if isinstance(p, pd.DataFrame) else pd.DataFrame(p, columns=columns) for p in parts]
    frames = [f[columns] for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def packet_table(logs, run_scale, t0_ns=0, in_flight=(), dropped=()):
    """logs: records() of every host (or those lists as frames). One row per packet sent:
    times in real-world seconds from t0, and its fate. in_flight: keys (`packet_key`) of packets still in the network
    at the end, which are not lost. dropped: (key, interface, reason) of every packet a
    switch dropped (the simulator knows them), which fill `drop_at` (`<switch>-eth<port>`)
    and `drop_reason`; both stay empty where no drop is known (the emulator)."""
    sent = _rows([log["sent"] for log in logs], COLUMNS)
    recv = _rows([log["received"] for log in logs], COLUMNS + ["recv_ns", "ce"])
    if not len(sent):
        return pd.DataFrame(columns=COLUMNS + ["ce", "send_s", "recv_s", "fate", "droppable",
                                               "drop_at", "drop_reason"])
    key = KEY
    recv = recv.drop_duplicates(key)   # a duplicated packet counts as delivered once
    out = sent.merge(recv[key + ["recv_ns", "ce", "flags"]].rename(columns={"flags": "recv_flags"}),
                     on=key, how="left")
    scale = run_scale.s_per_ns
    out["send_s"] = (out["send_ts_ns"] - t0_ns) * scale
    out["recv_s"] = (out["recv_ns"] - t0_ns) * scale
    trimmed = out["recv_flags"].fillna(0).astype(int) & int(Flags.TRIMMED)
    out["fate"] = "lost"
    out.loc[out["recv_ns"].notna(), "fate"] = "delivered"
    out.loc[(out["recv_ns"].notna()) & (trimmed > 0), "fate"] = "trimmed"
    in_flight = set(in_flight)
    if in_flight:
        pending = [k in in_flight for k in out[key].itertuples(index=False, name=None)]
        out.loc[out["recv_ns"].isna() & pd.Series(pending, index=out.index), "fate"] = "in_flight"
    out["droppable"] = (out["flags"] & int(Flags.DROPPABLE)) > 0
    where = {k: (at, reason) for k, at, reason in dropped}
    drops = [where.get(k, (None, None)) for k in out[key].itertuples(index=False, name=None)] \
        if where else [(None, None)] * len(out)
    out["drop_at"] = pd.Series([at for at, _ in drops], index=out.index, dtype=object)
    out["drop_reason"] = pd.Series([reason for _, reason in drops], index=out.index, dtype=object)
    return out.drop(columns=["recv_ns", "recv_flags"])
