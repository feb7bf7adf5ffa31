"""Named, parameterised pipeline stages: `Registry.create(name, **params)`.

Every stage class registers under a name; specs refer to stages by name. Unknown names and
unknown parameters are errors that list what is allowed, never silently ignored.
"""
import inspect


class SpecError(ValueError):
    """A switch spec names something that does not exist or gives a bad value."""


class Registry:
    def __init__(self, kind):
        self.kind = kind
        self._classes = {}

    def register(self, name):
        def add(cls):
            self._classes[name] = cls
            cls.name = name
            return cls
        return add

    def names(self):
        return sorted(self._classes)

    def get(self, name):
        try:
            return self._classes[name]
        except KeyError:
            raise SpecError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}") from None

    def parameters(self, name):
        """The keyword parameters a stage accepts, with their defaults."""
        cls = self.get(name)
        if "_parameters" not in cls.__dict__:   # inspect is slow; topologies build thousands
            sig = inspect.signature(cls.__init__)
            cls._parameters = {p.name: p.default for p in list(sig.parameters.values())[1:]
                               if p.kind is p.KEYWORD_ONLY}
        return dict(cls._parameters)

    def check(self, name, params):
        allowed = self.parameters(name)
        unknown = sorted(set(params) - set(allowed))
        if unknown:
            raise SpecError(f"{self.kind} {name!r} has no parameter {', '.join(map(repr, unknown))}; "
                            f"allowed: {', '.join(sorted(allowed)) or 'none'}")

    def create(self, name, **params):
        self.check(name, params)
        return self.get(name)(**params)


def require(cond, kind, field, allowed):
    """Raise SpecError naming the stage, the field and what is allowed unless cond holds."""
    if not cond:
        raise SpecError(f"{kind}: {field} must be {allowed}")
