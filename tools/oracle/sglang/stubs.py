"""Dummy modules for packages SGLang's scheduler imports pull in but never use
(its multimodal processors and torchvision, whose PyPI build is CUDA's and
breaks on the CPU torch).  A module asked for under a stubbed name is empty:
any attribute is a class that takes anything and, called as a decorator,
returns what it decorates.  Used by probe.py only."""
import importlib.abc, importlib.machinery, sys, types

STUB = set()

class _Any:
    def __init__(self, *a, **k): pass
    def __call__(self, *a, **k): return _Any()
    def __getattr__(self, name): return _Any()
    def __mro_entries__(self, bases): return (object,)
    def __iter__(self): return iter(())
    def __or__(self, o): return self
    __ror__ = __or__

class _Meta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Meta(name, (object,), {})


class _Mod(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Meta(name, (object,), {"__init__": lambda self, *a, **k: None,
                                       "__call__": lambda self, *a, **k: a[0] if a else self})

class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in STUB or any(name == x or name.startswith(x + ".") for x in STUB):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None
    def create_module(self, spec):
        m = _Mod(spec.name); m.__path__ = []; return m
    def exec_module(self, module):
        pass

def install(names):
    STUB.update(names)
    sys.meta_path.insert(0, Finder())
