"""A schedule's plan as it was first built, a Python record a message (before the messages
became numpy columns): the oracle that `host.schedule_plan.make_schedule_plan` must agree
with message for message and program for program (tests/test_schedule_programs.py)."""
from workloads.schedule import OpKind, TrafficClass, collectives, messages, steps

from dlcp_emu.host.schedule_plan import MAX_LAYER_MESSAGES, RankProgram, Send, _kind
from dlcp_emu.wire.layout import TENSOR_LAYER_SHIFT


def plan_by_records(s, scale, algorithms=None, server_of=None):
    """{src, dst, nbytes, tclass, dim, tid: [one a message in gid order], programs: [RankProgram]}."""
    n_ops = s.n_ops
    op_sends = [[] for _ in range(n_ops)]
    op_recvs = [[] for _ in range(n_ops)]
    src, dst, nbytes, tclass, layer_of, dims = [], [], [], [], [], []
    op_layer = s.layer.tolist()

    def add(op_s, op_r, a, b, n, after, tc, dim):
        gid = len(src)
        dims.append(dim)
        src.append(a)
        dst.append(b)
        nbytes.append(max(1, scale.nbytes(n)))
        tclass.append(tc)
        layer_of.append(op_layer[op_s])
        op_sends[op_s].append((gid, after))
        op_recvs[op_r].append(gid)

    for _, row in collectives(s).iterrows():
        st = steps(s, row, algorithms, server_of)
        op_of = dict(zip(s.groups[int(row["group"])], (int(o) for o in row["ops"])))
        dim = _kind(s.group_names[int(row["group"])])
        g0 = len(src)
        for a, b, n, d in zip(st.src.tolist(), st.dst.tolist(), st.nbytes.tolist(), st.dep.tolist()):
            add(op_of[a], op_of[b], a, b, n, g0 + d if d >= 0 else -1, int(row["tclass"]), dim)
    pp = [set(g) for g, name in zip(s.groups, s.group_names) if _kind(name) == "pp"]
    for m in messages(s).itertuples(index=False):
        a, b = int(m.src), int(m.dst)
        add(int(m.send_op), int(m.recv_op), a, b, int(m.nbytes), -1, int(m.tclass),
            "pp" if any(a in g and b in g for g in pp) else "p2p")
    tids = _tensor_ids(src, dst, layer_of)
    programs = [_program(s, r, op_sends, op_recvs, src, dst, nbytes, tids, scale) for r in range(s.n_ranks)]
    return {"src": src, "dst": dst, "nbytes": nbytes, "tclass": tclass, "dim": dims, "tid": tids,
            "programs": programs}


def _tensor_ids(src, dst, layer_of):
    count, out = {}, []
    for a, b, layer in zip(src, dst, layer_of):
        code = min(max(layer + 1, 0), (1 << 16) - 1)   # -1 (no layer): 0
        n = count.get((a, b, code), 0)
        assert n < MAX_LAYER_MESSAGES
        count[(a, b, code)] = n + 1
        out.append(code << TENSOR_LAYER_SHIFT | n)
    return out


def _program(s, r, op_sends, op_recvs, src, dst, nbytes, tids, scale):
    lo, hi = int(s.rank_ptr[r]), int(s.rank_ptr[r + 1])
    kinds = s.kind[lo:hi].tolist()
    dur = [scale.time_ns(us) if k == OpKind.COMPUTE else 0 for k, us in zip(kinds, s.duration_us[lo:hi].tolist())]
    deps = [tuple(s.dep_idx[s.dep_ptr[i]:s.dep_ptr[i + 1]].tolist()) for i in range(lo, hi)]
    n_layers = max(1, int(s.layer.max(initial=0)) + 1)
    tcl = s.tclass[lo:hi].tolist()
    prio = [0 if tc != TrafficClass.GRADIENT else 7 if layer < 0 else 1 + min(6, layer * 7 // n_layers)
            for tc, layer in zip(tcl, s.layer[lo:hi].tolist())]
    sends = [[Send(g, dst[g], nbytes[g], after, tids[g]) for g, after in op_sends[i]] for i in range(lo, hi)]
    recvs = [list(op_recvs[i]) for i in range(lo, hi)]
    recv_gid = {(src[g], tids[g]): g for rs in recvs for g in rs}
    return RankProgram(r, dur, [k == OpKind.COMPUTE for k in kinds], deps, sends, recvs, tcl, prio,
                       recv_gid, compute_ns=sum(dur))
