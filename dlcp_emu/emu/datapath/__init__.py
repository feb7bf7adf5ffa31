"""The switch process: the sans-I/O switch model on real frames and the monotonic clock."""
