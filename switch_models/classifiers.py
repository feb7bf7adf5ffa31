"""Classifiers: map a packet to a class, 0 = most important. `n_classes` tells the port how
many queues a priority scheduler needs. One classifier instance serves the whole switch, so
per-flow state (PIAS) is shared by its ports as a switch's would be."""
from bisect import bisect_left

from switch_models.registry import Registry, require
from switch_models.traffic import LOSS_TOLERANT, NONE, tolerant_table

CLASSIFIERS = Registry("classifier")


def _check_classes(kind, n):
    require(isinstance(n, int) and 1 <= n <= 8, kind, "n_classes", "an integer in 1..8")


def _scale(prio, n):
    """Sender priority 0..7 onto n classes."""
    return prio * n >> 3


@CLASSIFIERS.register("single")
class Single:
    """Every packet in one class (`cls`); NDP uses cls=1 so trimmed headers can jump ahead."""

    def __init__(self, *, cls=0):
        require(isinstance(cls, int) and 0 <= cls <= 7, "single", "cls", "an integer in 0..7")
        self.cls = cls
        self.n_classes = cls + 1

    def classify(self, pkt):
        return self.cls


@CLASSIFIERS.register("dscp")
class Dscp:
    """Trust the IP DSCP field (the data path turns it into `prio`); any switch could do this."""

    def __init__(self, *, n_classes=8):
        _check_classes("dscp", n_classes)
        self.n_classes = n_classes

    def classify(self, pkt):
        return _scale(pkt.prio, self.n_classes)


@CLASSIFIERS.register("pias")
class Pias:
    """PIAS: a flow starts in the top class and is demoted as its bytes sent cross each
    threshold, so short flows finish first without knowing flow sizes."""

    def __init__(self, *, thresholds=(100_000, 1_000_000, 10_000_000)):
        require(isinstance(thresholds, (list, tuple)), "pias", "thresholds",
                "a list of 1..7 increasing positive byte counts")
        thresholds = tuple(thresholds)
        require(1 <= len(thresholds) <= 7
                and all(isinstance(t, int) and not isinstance(t, bool) and t > 0 for t in thresholds)
                and list(thresholds) == sorted(set(thresholds)),
                "pias", "thresholds", "1..7 increasing positive byte counts")
        self.thresholds = thresholds
        self.n_classes = len(thresholds) + 1
        self.sent = {}

    def classify(self, pkt):
        sent = self.sent.get(pkt.flow, 0)
        self.sent[pkt.flow] = sent + pkt.size
        return bisect_left(self.thresholds, sent)   # demoted once sent exceeds a threshold


@CLASSIFIERS.register("layer")
class Layer:
    """Flow-level layer priority (ByteScheduler, P3, TicTac): the sender's per-tensor priority
    (front layers first) decides; every packet of a tensor shares it. Non-DLCP traffic goes to
    `other_class`."""

    def __init__(self, *, n_classes=8, other_class=None):
        _check_classes("layer", n_classes)
        self.n_classes = n_classes
        self.other = _other_class("layer", other_class, n_classes)

    def classify(self, pkt):
        if pkt.dlcp:
            return _scale(pkt.prio, self.n_classes)
        return self.other


@CLASSIFIERS.register("dlcp")
class Dlcp:
    """DLCP packet-level priority: layer priority and gradient magnitude class together onto
    n classes, by a precomputed table. `layer_weight` 1 means layer only, 0 magnitude only.
    A DLCP packet of a traffic class that must arrive whole (any class but `loss_tolerant`'s
    and `none`, which says nothing: activations, parameters, ...) goes to class 0, above
    every gradient; the table then spreads over classes 1..n-1."""

    def __init__(self, *, n_classes=8, layer_weight=0.5, other_class=None, loss_tolerant=LOSS_TOLERANT):
        _check_classes("dlcp", n_classes)
        require(isinstance(layer_weight, (int, float)) and 0 <= layer_weight <= 1,
                "dlcp", "layer_weight", "a number in [0, 1]")
        self.n_classes = n_classes
        self.other = _other_class("dlcp", other_class, n_classes)
        self.lossless = tuple(not t and c != NONE
                              for c, t in enumerate(tolerant_table("dlcp", loss_tolerant)))
        top = 1 if n_classes > 1 and any(self.lossless) else 0   # class 0 kept for them
        w = float(layer_weight)
        # Urgency in [0, 7]: low layer priority number and high magnitude are both urgent.
        self.table = [top + round((w * prio + (1 - w) * (7 - mag)) * (n_classes - 1 - top) / 7)
                      for prio in range(8) for mag in range(8)]

    def classify(self, pkt):
        if pkt.dlcp:
            if self.lossless[pkt.tclass]:
                return 0
            return self.table[(pkt.prio << 3) | pkt.mag]
        return self.other


@CLASSIFIERS.register("job")
class Job:
    """Per-job classes, several jobs on one fabric: a packet's class is `classes[job]` (the
    DLCP header's job field); a job past the list, and traffic without a DLCP header, goes to
    `other_class`. With a priority scheduler a job goes first; with DRR's weights the jobs
    share a link by weight."""

    def __init__(self, *, classes=(0,), n_classes=8, other_class=None):
        _check_classes("job", n_classes)
        require(isinstance(classes, (list, tuple)) and 1 <= len(classes) <= 256 and all(
                    isinstance(c, int) and not isinstance(c, bool) and 0 <= c < n_classes for c in classes),
                "job", "classes", f"a list of 1..256 classes in 0..{n_classes - 1}, one a job id")
        self.n_classes = n_classes
        self.other = _other_class("job", other_class, n_classes)
        self.classes = tuple(classes)

    def classify(self, pkt):
        job = pkt.job
        return self.classes[job] if job < len(self.classes) else self.other


def _other_class(kind, other_class, n_classes):
    if other_class is None:
        return n_classes - 1
    require(isinstance(other_class, int) and 0 <= other_class < n_classes, kind, "other_class",
            f"an integer in 0..{n_classes - 1}")
    return other_class
