"""What the tests over real UDP sockets on loopback share."""
import socket


def recv_with_tos(sock):
    """(datagram, ECN bits of its IP header, source) from a socket that asked for IP_RECVTOS."""
    data, anc, _, addr = sock.recvmsg(1 << 16, socket.CMSG_SPACE(1))
    (tos,) = [d[0] for level, kind, d in anc if level == socket.IPPROTO_IP]
    return data, tos & 3, addr
