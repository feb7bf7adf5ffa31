"""The flow a packet belongs to, for ECMP: one hash of its addresses and ports, the same in both
worlds. The emulator's data path hashes each frame's 5-tuple (`emu/datapath/frames.py`, and
`python_tuple_hash` in dlcp_native/src/datapath/frames.cpp, CPython's tuple hash step for step); the
simulator hashes the 5-tuple its hosts' packets would carry, so ECMP picks the same paths."""


def flow_hash(src_ip, dst_ip, proto, sport, dport):
    """src_ip, dst_ip: the addresses as integers; proto: 6 (TCP) or 17 (UDP)."""
    return hash((src_ip, dst_ip, proto, sport, dport))
