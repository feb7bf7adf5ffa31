"""A host's message and delivery records as numpy columns, whichever form they came in: rows
(tuples, as the Python agents and the emulated hosts' files give them) or columns (a dict of
arrays, as the core's schedule agents give them: a 1024-GPU run has ten million messages,
and a Python tuple a message cost minutes and gigabytes after the run)."""
import numpy as np

MESSAGE_FIELDS = ("iteration", "gid", "src", "dst", "tclass", "nbytes", "sent_ns", "done_ns", "lost_bytes")
DELIVERY_FIELDS = ("src", "iteration", "tensor_id", "nbytes", "lost_bytes", "first_ns", "done_ns")


def message_columns(records):
    """{field: array} of MessageRecords (`host.schedule_agent.MessageRecord`) given as rows
    or as columns."""
    return _columns(records, MESSAGE_FIELDS)


def delivery_columns(records):
    """({field: array}, [(row, {magnitude class: lost bytes})] for the rows that lost any) of a
    host's deliveries given as rows (the by-class losses last in each) or as columns (with
    `lost_by_class`: (row, [(class, bytes)]) pairs)."""
    if isinstance(records, dict):
        return _columns(records, DELIVERY_FIELDS), [(i, dict(pairs)) for i, pairs in records["lost_by_class"]]
    return _columns([r[:7] for r in records], DELIVERY_FIELDS), [(i, r[7]) for i, r in enumerate(records) if r[7]]


def _columns(records, fields):
    if isinstance(records, dict):
        return {f: np.asarray(records[f], dtype=np.int64) for f in fields}
    if not len(records):
        return {f: np.zeros(0, dtype=np.int64) for f in fields}
    return {f: np.asarray(col) for f, col in zip(fields, zip(*records))}
