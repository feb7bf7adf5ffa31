"""Per-packet records of an endpoint: every packet it sends and receives, bounded.

`PacketLog(endpoint)` has the endpoint's own surface (receive, poll, next_timeout, ...)
and passes everything through, keeping one row a packet. The runner joins a run's send and
receive rows on the packet's identity (source, destination, type, iteration, tensor,
chunk, send timestamp: a retransmission has its own) to give each packet its fate:
delivered, trimmed (payload cut on the way), lost, or in flight (still in the network when
the run ended: the simulator knows which). The simulator also says where and why each lost
packet was dropped.
"""
import os

import numpy as np

from dlcp_emu.wire import FRAME_OVERHEAD, Flags

MAX_RECORDS = 500_000
COLUMNS = ["src", "dst", "type", "iteration", "tensor_id", "chunk", "send_ts_ns", "flags",
           "priority", "mag_class", "tclass", "size"]
RECEIVED_COLUMNS = COLUMNS + ["recv_ns", "ce"]


def columns(rows, names):
    """Rows (tuples) as the columns every log hands over: {name: int64 array}, `ce` bool."""
    data = list(zip(*rows)) if rows else [()] * len(names)
    return {n: np.asarray(c, dtype=bool if n == "ce" else np.int64) for n, c in zip(names, data)}


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
                h.send_ts_ns, int(h.flags), h.priority, h.mag_class, h.tclass, FRAME_OVERHEAD + payload_len)

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
        """{"sent", "received": {column: array} (`columns`), "overflow": rows not kept}."""
        return {"sent": columns(self.sent, COLUMNS), "received": columns(self.received, RECEIVED_COLUMNS),
                "overflow": self.overflow}


PARTS = ("sent", "received")


def record_files(prefix):
    """{part: path} of a host's records as `write_records` writes them."""
    return {part: f"{prefix}.{part}.arrow" for part in PARTS}


def write_records(records, prefix):
    """A host's records() into `record_files(prefix)`: Arrow IPC, uncompressed, which the
    runner reads back as soon as the hosts have left and merges into the run's table; a host
    then leaves in a blink (parquet took it 0.4-0.6 s)."""
    import pyarrow as pa
    import pyarrow.feather as feather
    for part, path in record_files(prefix).items():
        feather.write_feather(pa.table(records[part]), path, compression="uncompressed")


def read_records(prefix):
    """What `write_records` wrote, as records() hands it over (columns), or None if a part is
    missing (the host wrote none)."""
    import pyarrow.feather as feather
    paths = record_files(prefix)
    if not all(os.path.exists(p) for p in paths.values()):
        return None
    tables = {part: feather.read_table(p) for part, p in paths.items()}
    return {part: {n: t.column(n).to_numpy() for n in t.column_names} for part, t in tables.items()}


KEY = ["src", "dst", "type", "iteration", "tensor_id", "chunk", "send_ts_ns"]


def packet_key(h):
    """A packet's identity, from its header, as the table joins on it."""
    return (h.src_rank, h.dst_rank, int(h.type), h.iteration, h.tensor_id, h.chunk_index, h.send_ts_ns)


def _rows(parts, names):
    """One frame of the rows of every host, from their columns (records())."""
    import pandas as pd   # here: the core's hosts import this module, and pandas takes ~0.5 s
    frames = [pd.DataFrame(p, columns=names) for p in parts]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=names)


def packet_table(logs, run_scale, t0_ns=0, in_flight=(), dropped=()):
    """logs: records() of every host. One row per packet sent:
    times in real-world seconds from t0, and its fate. in_flight: keys (`packet_key`) of packets still in the network
    at the end, which are not lost. dropped: (key, interface, reason) of every packet a
    switch dropped (the simulator knows them), which fill `drop_at` (`<switch>-eth<port>`)
    and `drop_reason`; both stay empty where no drop is known (the emulator)."""
    import pandas as pd
    sent = _rows([log["sent"] for log in logs], COLUMNS)
    recv = _rows([log["received"] for log in logs], RECEIVED_COLUMNS)
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
    pending = _matches(out, pd.DataFrame(list(in_flight), columns=key))
    out.loc[out["recv_ns"].isna() & pending, "fate"] = "in_flight"
    out["droppable"] = (out["flags"] & int(Flags.DROPPABLE)) > 0
    # Where and why (the simulator's drops): the last drop known of each packet.
    where = pd.DataFrame([(*k, at, reason) for k, at, reason in dropped], columns=key + ["drop_at", "drop_reason"])
    where = where.drop_duplicates(key, keep="last")
    found = out[key].merge(where, on=key, how="left") if len(where) else None
    for col in ("drop_at", "drop_reason"):
        values = np.full(len(out), None, dtype=object)
        if found is not None:
            known = found[col].notna().to_numpy()
            values[known] = found[col].to_numpy(object)[known]
        out[col] = pd.Series(values, index=out.index, dtype=object)
    return out.drop(columns=["recv_ns", "recv_flags"])


def _matches(frame, keys):
    """Whether each row of `frame` has its packet key (KEY) among the rows of `keys`."""
    import pandas as pd
    if not len(keys):
        return pd.Series(False, index=frame.index)
    marked = frame[KEY].merge(keys.drop_duplicates().assign(_hit=True), on=KEY, how="left")
    return pd.Series(marked["_hit"].notna().to_numpy(), index=frame.index)
