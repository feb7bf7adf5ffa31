"""What runs on a host, sans-I/O: agents, the host stack, plans, compression, packet records."""
