"""A schedule's collectives expanded into their algorithms' steps, each shape once: a 1024-GPU
LLaMA-7B with tp 8 and dp 128 has 16,912 collective instances but few shapes (the 128 tensor-
parallel groups repeat one layer's all-reduces, the 8 rails' rings one bucket's), and an
expansion is a numpy call a round (the rings': 254 rounds). A shape is what an algorithm
can see of a collective: its kind, size, class, the members' order among themselves, the
root's place and the order of their servers; the steps expanded on those labels are then
given the members' ranks (`workloads.collectives.expand` treats ranks and servers as labels
it only compares)."""
import numpy as np

from workloads.collectives import Steps, expand
from workloads.schedule import OpKind, collectives, steps


def collective_steps(s, algorithms=None, server_of=None):
    """(row, Steps) for every collective instance of the valid schedule s, in the order of
    `workloads.schedule.collectives(s)` (row: its named tuple), the steps `steps(s, row,
    algorithms, server_of)` gives."""
    try:
        servers = None if server_of is None else np.asarray([server_of(r) for r in range(s.n_ranks)],
                                                            dtype=np.int64)
    except (IndexError, KeyError, TypeError, ValueError):
        servers, server_of_all = None, False     # not a server for every rank: no shapes
    else:
        server_of_all = True
    cache, members = {}, {}
    for row in collectives(s).itertuples(index=False):
        if server_of is not None and not server_of_all:
            yield row, steps(s, row._asdict(), algorithms, server_of)
        else:
            g = int(row.group)
            if g not in members:
                members[g] = _members(s.groups[g], servers)
            yield row, _by_shape(s, row, algorithms, server_of, members[g], cache)


def _members(group, servers):
    """(the ranks, sorted; each member's place among them; the labels' servers, numbered in
    their order, or None)."""
    ranks = np.asarray(group, dtype=np.int64)
    order = np.argsort(ranks, kind="stable")
    label = np.empty(len(ranks), dtype=np.int64)
    label[order] = np.arange(len(ranks))
    where = None if servers is None else np.unique(servers[ranks[order]], return_inverse=True)[1].reshape(-1)
    return ranks[order], label, where


def _by_shape(s, row, algorithms, server_of, members, cache):
    real, label, where = members
    root = int(row.root)
    at = np.flatnonzero(real == root)
    if root >= 0 and not len(at):
        return steps(s, row._asdict(), algorithms, server_of)     # its error names the ranks
    root_label = int(at[0]) if root >= 0 else None
    key = (int(row.kind), int(row.nbytes), int(row.tclass), root_label, label.tobytes(),
           None if where is None else where.tobytes())
    st = cache.get(key)
    if st is None:
        kind = OpKind(int(row.kind)).label
        try:
            st = expand(kind, label.tolist(), int(row.nbytes), (algorithms or {}).get(kind), tclass=int(row.tclass),
                        root=root_label, server_of=None if where is None else where.tolist().__getitem__)
        except ValueError:
            return steps(s, row._asdict(), algorithms, server_of)     # its error names the ranks
        cache[key] = st
    return Steps(real[st.src], real[st.dst], st.nbytes, st.round, st.dep, st.tclass)
