"""The emulator: Mininet, switch and host processes, the real-time data path."""
from pathlib import Path

# Where the processes of a run start (`python -m dlcp_emu...` works from here even without
# the package installed); every path handed to them is absolute.
PROJECT_ROOT = Path(__file__).resolve().parents[2]
