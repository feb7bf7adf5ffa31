"""The config file of a process the emulator starts (a switch, a host's agent, its background
traffic): one frozen dataclass per process, the single statement of its fields, that the
runner writes and the process reads with the same class.

    @dataclass(frozen=True, kw_only=True)
    class MyConfig(ProcessConfig):
        rank: int
        out_path: str

    MyConfig(rank=0, out_path="x.json").write(path)     # the runner
    cfg = MyConfig.read(path)                            # the process

Every field is in the file and nothing else is: a key the class does not have, or one it
has that the file lacks, is a config of another version, an error naming the field.
Values are JSON's (lists, str keys), so that what is read equals what was written.
"""
import json
from dataclasses import fields


class ConfigError(ValueError):
    """A process config is missing something or has a bad value; the message says what."""


class ProcessConfig:
    """to_json/write and from_json/read of a frozen dataclass (see the module's docstring)."""

    @classmethod
    def field_names(cls):
        return [f.name for f in fields(cls)]

    def to_json(self):
        """{field: value} of every field."""
        return {name: getattr(self, name) for name in self.field_names()}

    def write(self, path, indent=1):
        with open(path, "w") as f:
            f.write(json.dumps(self.to_json(), indent=indent))

    @classmethod
    def from_json(cls, data):
        """The config a JSON object states: every field, and nothing else."""
        kind = cls.__name__
        if not isinstance(data, dict):
            raise ConfigError(f"{kind}: a config is a JSON object, got {type(data).__name__}")
        names = cls.field_names()
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ConfigError(f"{kind}: unknown field(s) {unknown} (a config of another version?); "
                              f"the fields are {names}")
        missing = [n for n in names if n not in data]
        if missing:
            raise ConfigError(f"{kind}: missing field(s) {missing} (a config of another version?)")
        return cls(**data)

    @classmethod
    def read(cls, path):
        with open(path) as f:
            try:
                data = json.load(f)
            except ValueError as e:
                raise ConfigError(f"{cls.__name__}: {path} is not JSON ({e})") from None
        return cls.from_json(data)
