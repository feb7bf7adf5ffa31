"""Chakra execution traces (one ``.et`` file a rank) -> Schedule, read through mlc-chakra.

Files: ``<prefix>.<rank>.et`` for ranks 0..n-1 (what ``chakra_converter`` writes), given
as the prefix or as the folder holding them; their count must be the ranks asked for.
Each file is a GlobalMetadata message then Node messages (Chakra's schema, read with its
protobuf classes and its ``decodeMessage``). Nodes:

- COMP_NODE, MEM_LOAD_NODE, MEM_STORE_NODE, METADATA_NODE -> compute ops of
  ``duration_micros``;
- COMM_COLL_NODE -> a collective: attr ``comm_type`` (ALL_REDUCE, ALL_GATHER,
  REDUCE_SCATTER, ALL_TO_ALL, BROADCAST; others are errors), ``comm_size`` bytes; its group:
  attr ``pg_name`` looked up in ``process_groups`` (name -> ranks; a name not there is an
  error), else the ``class_groups`` kind of ``layout`` for its traffic class (e.g.
  {"gradient": "dp", "activation": "tp"}), else all ranks;
- COMM_SEND_NODE / COMM_RECV_NODE -> send/recv: attrs ``comm_src``, ``comm_dst``,
  ``comm_tag``, ``comm_size``.

Dependencies are ``data_deps`` and ``ctrl_deps``; nodes are put in a topological order that
keeps the file's order where it can. ``streams="group"`` (the default) adds one more: a
rank's collectives of one process group run one at a time in that order, as a NCCL
communicator runs what is issued on it (a text converter's trace chains nothing, and its
weight-gradient all-reduces would otherwise overlap for free on an ideal network);
``streams="trace"`` keeps only the trace's dependencies. The traffic class is attr
``traffic_class`` when a node has one (a class label), else follows from the compute node it
waits for (names with BWD_WG -> gradient, BWD_IG -> activation-gradient, FWD -> activation,
as Chakra's text converter names them), else from the kind (all-to-all -> all-to-all,
all-gather and broadcast -> parameters, all-reduce and reduce-scatter -> gradient, send/recv
-> activation).
"""

from __future__ import annotations

import heapq
import re
from pathlib import Path

from workloads.schedule.layout import RankLayout
from workloads.schedule.ops import CLASS_BY_LABEL, RankOps, Schedule, ScheduleError, assemble
from workloads.schedule.ops import OpKind as K
from workloads.schedule.ops import TrafficClass as C


def _chakra():
    try:
        from chakra.schema.protobuf import et_def_pb2
        from chakra.src.third_party.utils.protolib import decodeMessage, openFileRd
    except ImportError as e:  # pragma: no cover - setup installs it
        raise ImportError("Chakra traces need the mlc-chakra package (make setup installs it)"
                          ) from e
    return et_def_pb2, decodeMessage, openFileRd


def trace_files(path, ranks: int) -> list[Path]:
    """The per-rank files of a trace, rank 0 first; an error unless there are ``ranks``."""
    p = Path(path)
    folder, prefix = (p, None) if p.is_dir() else (p.parent, p.name)
    found = {}
    for f in folder.glob("*.et"):
        m = re.fullmatch(r"(.*)\.(\d+)\.et", f.name)
        if m and (prefix is None or m.group(1) == prefix):
            found.setdefault(m.group(1), {})[int(m.group(2))] = f
    if len(found) != 1:
        what = "no <prefix>.<rank>.et files" if not found else f"several traces {sorted(found)}"
        raise ScheduleError(f"{path}: {what}; give the prefix of one trace")
    files = next(iter(found.values()))
    if sorted(files) != list(range(len(files))):
        raise ScheduleError(f"{path}: ranks {sorted(files)} are not 0..{len(files) - 1}")
    if len(files) != ranks:
        raise ScheduleError(f"{path}: the trace has {len(files)} ranks, asked for {ranks}")
    return [files[r] for r in range(ranks)]


def read_nodes(file: Path) -> list:
    et_def_pb2, decode, open_rd = _chakra()
    f = open_rd(str(file))
    try:
        meta = et_def_pb2.GlobalMetadata()
        decode(f, meta)
        nodes = []
        while True:
            node = et_def_pb2.Node()
            if not decode(f, node):
                return nodes
            nodes.append(node)
    finally:
        f.close()


def _attrs(node) -> dict:
    return {a.name: getattr(a, a.WhichOneof("value")) for a in node.attr
            if a.WhichOneof("value")}


def _topological(nodes, where) -> list[int]:
    pos = {n.id: i for i, n in enumerate(nodes)}
    if len(pos) != len(nodes):
        raise ScheduleError(f"{where}: node ids are not unique")
    waits = [0] * len(nodes)
    children: list[list[int]] = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        for d in {*n.data_deps, *n.ctrl_deps}:
            if d not in pos:
                raise ScheduleError(f"{where}: node {n.id} ({n.name!r}) depends on node {d}, "
                                    "which is not in the trace")
            waits[i] += 1
            children[pos[d]].append(i)
    ready = [i for i in range(len(nodes)) if not waits[i]]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for c in children[i]:
            waits[c] -= 1
            if not waits[c]:
                heapq.heappush(ready, c)
    if len(order) != len(nodes):
        stuck = next(nodes[i] for i in range(len(nodes)) if waits[i])
        raise ScheduleError(f"{where}: dependencies form a cycle (node {stuck.id}, {stuck.name!r})")
    return order


STREAMS = ("group", "trace")
# Which layout group each class is reduced over in a tensor- and data-parallel trace (the
# text converter's HYBRID_* traces name no process group).
TP_CLASS_GROUPS = {"activation": "tp", "activation-gradient": "tp", "gradient": "dp"}


def load_chakra(path, ranks: int, *, process_groups: dict | None = None,
                layout: RankLayout | None = None, class_groups: dict | None = None,
                streams: str = "group") -> Schedule:
    """The schedule of a Chakra trace of ``ranks`` ranks (see the module doc)."""
    if streams not in STREAMS:
        raise ScheduleError(f"streams: {streams!r} unknown; allowed: {', '.join(STREAMS)}")
    et_def_pb2, _, _ = _chakra()
    T = et_def_pb2
    coll = {T.ALL_REDUCE: K.ALL_REDUCE, T.ALL_GATHER: K.ALL_GATHER,
            T.REDUCE_SCATTER: K.REDUCE_SCATTER, T.ALL_TO_ALL: K.ALL_TO_ALL,
            T.BROADCAST: K.BROADCAST}
    compute_types = {T.COMP_NODE, T.MEM_LOAD_NODE, T.MEM_STORE_NODE, T.METADATA_NODE}
    if class_groups and layout is None:
        raise ScheduleError("class_groups needs the rank layout (layout=RankLayout(...))")
    if layout is not None and layout.n_ranks != ranks:
        raise ScheduleError(f"the layout has {layout.n_ranks} ranks, asked for {ranks}")
    groups = list(layout.groups) if layout else []
    names = list(layout.group_names) if layout else []
    extra: dict[tuple, int] = {}

    def group_id(members, name) -> int:
        key = tuple(sorted(int(m) for m in members))
        if key not in extra:
            extra[key] = len(groups)
            groups.append(key)
            names.append(name)
        return extra[key]

    labels: dict[str, int] = {}
    per_rank = []
    for rank, file in enumerate(trace_files(path, ranks)):
        nodes = read_nodes(file)
        where = str(file)
        order = _topological(nodes, where)
        by_id = {n.id: n for n in nodes}
        local = {nodes[i].id: k for k, i in enumerate(order)}
        ops = RankOps(labels)
        last_of_group: dict[int, int] = {}   # group -> this rank's latest collective on it
        for i in order:
            n = nodes[i]
            deps = [local[d] for d in {*n.data_deps, *n.ctrl_deps}]
            if n.type in compute_types:
                ops.add(K.COMPUTE, n.name, sorted(deps), duration_us=float(n.duration_micros))
                continue
            at = _attrs(n)
            tclass = _traffic_class(n, at, by_id, where)
            size = int(at.get("comm_size", 0))
            if n.type == T.COMM_COLL_NODE:
                ct = at.get("comm_type")
                if ct not in coll:
                    allowed = ", ".join(T.CollectiveCommType.Name(c) for c in coll)
                    named = T.CollectiveCommType.Name(ct) if ct in T.CollectiveCommType.values() else "unknown"
                    raise ScheduleError(f"{where}: node {n.id} ({n.name!r}): comm_type {ct} ({named}) "
                                        f"not supported; allowed: {allowed}")
                kind = coll[ct]
                tc = tclass or _by_kind(kind)
                if "pg_name" in at and process_groups:
                    if at["pg_name"] not in process_groups:
                        raise ScheduleError(f"{where}: node {n.id} ({n.name!r}): pg_name "
                                            f"{at['pg_name']!r} is no process group given; they are "
                                            f"{', '.join(map(repr, process_groups))}")
                    g = group_id(process_groups[at["pg_name"]], f"pg {at['pg_name']}")
                elif class_groups and tc.label in class_groups:
                    g = layout.group_of(rank, class_groups[tc.label])
                else:
                    g = group_id(range(ranks), "all")
                if streams == "group" and g in last_of_group:
                    deps = {*deps, last_of_group[g]}
                last_of_group[g] = local[n.id]
                ops.add(kind, n.name, sorted(deps), nbytes=size, group=g, tclass=tc)
            elif n.type in (T.COMM_SEND_NODE, T.COMM_RECV_NODE):
                send = n.type == T.COMM_SEND_NODE
                src, dst = int(at.get("comm_src", -1)), int(at.get("comm_dst", -1))
                if (src if send else dst) != rank:
                    raise ScheduleError(f"{where}: node {n.id} ({n.name!r}): a "
                                        f"{'send' if send else 'recv'} of rank {rank} needs "
                                        f"comm_{'src' if send else 'dst'} {rank}, got "
                                        f"{src if send else dst}")
                ops.add(K.SEND if send else K.RECV, n.name, sorted(deps), nbytes=size,
                        peer=dst if send else src, tag=int(at.get("comm_tag", 0)),
                        tclass=tclass or C.ACTIVATION)
            else:
                raise ScheduleError(f"{where}: node {n.id} ({n.name!r}): node type "
                                    f"{T.NodeType.Name(n.type)} not supported")
        per_rank.append(ops.arrays())
    meta = {"importer": "workloads.importers.chakra_et", "source": str(path)}
    return assemble(ranks, per_rank, groups, names, labels, meta)


def _by_kind(kind: K) -> C:
    return {K.ALL_TO_ALL: C.ALL_TO_ALL, K.ALL_GATHER: C.PARAMETERS,
            K.BROADCAST: C.PARAMETERS}.get(kind, C.GRADIENT)


def _traffic_class(node, at: dict, by_id: dict, where) -> C | None:
    if "traffic_class" in at:
        if at["traffic_class"] not in CLASS_BY_LABEL:
            raise ScheduleError(f"{where}: node {node.id} ({node.name!r}): traffic_class "
                                f"{at['traffic_class']!r} unknown; allowed: "
                                f"{', '.join(CLASS_BY_LABEL)}")
        return CLASS_BY_LABEL[at["traffic_class"]]
    for d in node.data_deps:
        name = by_id[d].name
        for key, tc in (("BWD_WG", C.GRADIENT), ("BWD_IG", C.ACTIVATION_GRADIENT),
                        ("FWD", C.ACTIVATION)):
            if key in name:
                return tc
    return None
