"""Writing JSON so that a reader (or a crash) never sees half a file."""
import json
import os


def write_json_atomic(path, data, *, indent=None, default=None, fsync=False):
    """Write to a temporary file beside `path`, then rename over it. fsync=True for state
    that must survive a machine crash (a run's record of what it created)."""
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    text = json.dumps(data, indent=indent, default=default)   # json.dump's many small writes: 8x slower
    with open(tmp, "w") as f:
        f.write(text)
        if fsync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
