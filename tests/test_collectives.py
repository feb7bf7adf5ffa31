"""Collective algorithms against their closed forms: the bytes every rank sends, the number
of rounds, and that every step's dependency is a step into its source from an earlier round."""
import numpy as np
import pytest

from workloads.collectives import ALGORITHMS, chunks, expand

S = 1_000_003  # not a multiple of anything: chunking must still be exact


def _check_deps(st):
    for i in range(len(st)):
        d = st.dep[i]
        if d >= 0:
            assert st.dst[d] == st.src[i] and st.round[d] < st.round[i]


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_ring_all_reduce_sends_2_n_minus_1_over_n(n):
    st = expand("all-reduce", range(n), S, "ring")
    per = st.sent(range(n))
    # every rank sends 2(n-1)/n of S, to within the one-byte chunk rounding
    assert np.all(np.abs(per - 2 * (n - 1) * S / n) <= 2 * (n - 1))
    assert per.sum() == 2 * (n - 1) * S  # each chunk travels 2(n-1) hops
    assert st.rounds == 2 * (n - 1)
    _check_deps(st)


@pytest.mark.parametrize("kind", ["reduce-scatter", "all-gather"])
@pytest.mark.parametrize("n", [2, 4, 7])
def test_ring_reduce_scatter_and_all_gather_send_n_minus_1_over_n(kind, n):
    st = expand(kind, range(n), S, "ring")
    per = st.sent(range(n))
    assert per.sum() == (n - 1) * S
    assert np.all(np.abs(per - (n - 1) * S / n) <= n)
    assert st.rounds == n - 1
    _check_deps(st)


@pytest.mark.parametrize("n", [2, 4, 16])
def test_halving_doubling_has_ring_totals_in_log2_n_rounds(n):
    log = n.bit_length() - 1
    for kind, rounds in [("reduce-scatter", log), ("all-gather", log), ("all-reduce", 2 * log)]:
        hd, ring = expand(kind, range(n), S, "halving-doubling"), expand(kind, range(n), S, "ring")
        assert hd.rounds == rounds
        assert hd.nbytes.sum() == ring.nbytes.sum()
        assert np.all(np.abs(hd.sent(range(n)) - ring.sent(range(n))) <= 2 * n)
        # each round pairs ranks: everyone sends to exactly one partner
        for r in range(hd.rounds):
            at = hd.round == r
            assert sorted(hd.src[at]) == list(range(n)) == sorted(hd.dst[at])
        _check_deps(hd)


def test_halving_halves_and_doubling_doubles_the_message():
    n, size = 8, 8 * 1024
    per_round = lambda st: [int(st.nbytes[(st.round == r) & (st.src == 0)].sum())  # noqa: E731
                            for r in range(st.rounds)]
    assert per_round(expand("reduce-scatter", range(n), size, "halving-doubling")) == \
        [4096, 2048, 1024]
    assert per_round(expand("all-gather", range(n), size, "halving-doubling")) == \
        [1024, 2048, 4096]
    assert per_round(expand("all-reduce", range(n), size, "halving-doubling")) == \
        [4096, 2048, 1024, 1024, 2048, 4096]
    # round k of the halving pairs i with i xor n / 2^(k+1)
    st = expand("reduce-scatter", range(n), size, "halving-doubling")
    assert st.dst[(st.round == 0) & (st.src == 0)].tolist() == [4]


def test_halving_doubling_rejects_a_group_that_is_not_a_power_of_two():
    with pytest.raises(ValueError, match="power-of-two"):
        expand("all-reduce", range(6), S, "halving-doubling")


@pytest.mark.parametrize("g,m", [(2, 2), (4, 3), (8, 2)])
def test_hierarchical_all_reduce_splits_intra_and_inter_server_bytes(g, m):
    ranks = list(range(g * m))
    st = expand("all-reduce", ranks, S, "hierarchical", server_of=lambda r: r // g)
    intra = (st.src // g) == (st.dst // g)
    per_intra = np.bincount(st.src[intra], weights=st.nbytes[intra], minlength=g * m)
    per_inter = np.bincount(st.src[~intra], weights=st.nbytes[~intra], minlength=g * m)
    assert np.all(np.abs(per_intra - 2 * (g - 1) * S / g) <= 2 * g)
    assert np.all(np.abs(per_inter - 2 * (m - 1) * S / g / m) <= 2 * m + 2)
    # across servers only GPU i talks to GPU i (its rail)
    assert np.all((st.src[~intra] % g) == (st.dst[~intra] % g))
    assert per_intra.sum() + per_inter.sum() == st.nbytes.sum()
    _check_deps(st)


@pytest.mark.parametrize("kind", ["reduce-scatter", "all-gather"])
def test_hierarchical_reduce_scatter_and_all_gather_total_n_minus_1_over_n(kind):
    g, m = 4, 3
    st = expand(kind, range(g * m), S, "hierarchical", server_of=lambda r: r // g)
    assert np.all(np.abs(st.sent(range(g * m)) - (g * m - 1) * S / (g * m)) <= 2 * g * m)


def test_hierarchical_needs_equal_servers():
    with pytest.raises(ValueError, match="same number"):
        expand("all-reduce", [0, 1, 2], S, "hierarchical", server_of=lambda r: r // 2)


@pytest.mark.parametrize("n", [2, 3, 8])
def test_pairwise_all_to_all_sends_n_minus_1_over_n_to_everyone_once(n):
    st = expand("all-to-all", range(n), S, "pairwise")
    per = st.sent(range(n))
    assert np.all(per == S - chunks(S, n))  # every block but its own
    assert np.all(np.abs(per - (n - 1) * S / n) <= 1)
    assert st.rounds == n - 1
    pairs = set(zip(st.src.tolist(), st.dst.tolist()))
    assert pairs == {(i, j) for i in range(n) for j in range(n) if i != j}


@pytest.mark.parametrize("algo", ["tree", "ring"])
@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_broadcast_reaches_every_rank_once_from_the_root(algo, n):
    ranks = list(range(10, 10 + n))
    root = ranks[-1]
    st = expand("broadcast", ranks, S, algo, root=root)
    assert sorted(st.dst.tolist()) == sorted(r for r in ranks if r != root)
    assert np.all(st.nbytes == S)
    # a rank sends only after it has the data
    for i in range(len(st)):
        assert st.src[i] == root or st.dep[i] >= 0
    if algo == "tree" and n > 1:
        assert st.rounds == int(np.ceil(np.log2(n)))


def test_unknown_kind_or_algorithm_names_what_is_allowed():
    with pytest.raises(ValueError, match="allowed: ring, halving-doubling, hierarchical"):
        expand("all-reduce", range(4), S, "butterfly")
    with pytest.raises(ValueError, match="unknown collective"):
        expand("gather", range(4), S)
    assert set(ALGORITHMS["all-to-all"]) == {"pairwise"}


def test_finish_times_follow_the_critical_path():
    n = 4
    st = expand("all-reduce", range(n), 4000, "ring")
    end = st.finish_times(lambda s, d, b: 1e-6 + b / 1e9)
    # 2(n-1) sequential rounds of S/n bytes each
    assert end.max() == pytest.approx(2 * (n - 1) * (1e-6 + 1000 / 1e9))
