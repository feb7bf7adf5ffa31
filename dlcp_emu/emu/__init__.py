"""The emulator: Mininet, switch and host processes, the real-time data path."""
