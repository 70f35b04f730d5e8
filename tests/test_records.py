"""serq.records: a dataclass made when first used is the dataclass the eager
decorator makes, whatever touches it first."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys
import textwrap

import pytest

from serq import records
from serq.ir import model as M
from serq.syntax import ast as A

SOURCE = '''
from typing import Optional

@dataclass
class Base:
    span: int

@dataclass
class Node(Base):
    name: str
    items: list = field(default_factory=list)
    flag: bool = False

@dataclass(frozen=True)
class Leaf:
    """A leaf."""
    value: float
    tags: tuple = ()
    note: Optional[str] = field(default=None, metadata={"omit": True})

@dataclass(frozen=True)
class Pair:
    left: Leaf
    right: Leaf
'''

# what touches a fresh class first (``made+``: an instance made, then the
# named method read, which is made then)
FIRST = ["init", "fields", "repr", "eq", "hash", "match_args", "doc", "setattr", "is_dataclass", "pickle",
         "made+eq", "made+hash", "made+repr", "made+setattr"]


def classes(decorator):
    ns = {"dataclass": decorator, "field": dataclasses.field}
    exec(compile(SOURCE, "<records>", "exec"), ns)
    return ns


def touch(ns, how):
    Leaf = ns["Leaf"]
    if how.startswith("made+"):
        leaf = Leaf(1.0)
        how = how[5:]
        if how == "eq":
            assert leaf == Leaf(1.0) and ns["Node"](0, "x") != ns["Node"](0, "y")
        elif how == "hash":
            assert hash(leaf) == hash(Leaf(1.0))
        elif how == "repr":
            assert repr(leaf) == "Leaf(value=1.0, tags=(), note=None)"
        elif how == "setattr":
            with pytest.raises(dataclasses.FrozenInstanceError):
                leaf.value = 2.0
        return
    if how == "init":
        Leaf(1.0)
    elif how == "fields":
        dataclasses.fields(ns["Node"])
    elif how == "repr":
        repr(Leaf)
    elif how == "eq":
        assert Leaf.__eq__ is not None
    elif how == "hash":
        Leaf.__hash__
    elif how == "match_args":
        Leaf.__match_args__
    elif how == "doc":
        ns["Pair"].__doc__
    elif how == "setattr":
        Leaf.__setattr__
    elif how == "is_dataclass":
        dataclasses.is_dataclass(ns["Node"])
    elif how == "pickle":
        pickle.loads(pickle.dumps(Leaf.__doc__))


def behaviour(ns) -> list:
    """Everything a user of the classes sees."""
    Base, Node, Leaf, Pair = ns["Base"], ns["Node"], ns["Leaf"], ns["Pair"]
    out = []
    n = Node(1, "a")
    m = Node(1, "a", [2], True)
    out += [repr(n), repr(m), n == Node(1, "a"), n == m, n != m, Node.__hash__, n.items is not Node(2, "b").items]
    n.name = "b"
    out.append(repr(n))
    leaf = Leaf(2.5, ("x",))
    out += [repr(leaf), hash(leaf) == hash(Leaf(2.5, ("x",))), leaf == Leaf(2.5, ("x",)), leaf == Leaf(2.5)]
    with pytest.raises(dataclasses.FrozenInstanceError) as e:
        leaf.value = 3.0
    out.append(str(e.value))
    with pytest.raises(dataclasses.FrozenInstanceError):
        del leaf.value
    out.append([(f.name, f.default, f.default_factory, dict(f.metadata)) for f in dataclasses.fields(Leaf)])
    out.append([f.name for f in dataclasses.fields(Node)])
    out += [Leaf.__match_args__, Node.__match_args__, Pair.__doc__, Leaf.__doc__, Node.__doc__]
    out += [dataclasses.is_dataclass(Pair), dataclasses.astuple(Pair(leaf, Leaf(1.0)))]
    out.append(repr(dataclasses.replace(leaf, value=9.0)))
    p = Pair(leaf, Leaf(0.0))
    out.append(repr(copy.deepcopy(p)))
    with pytest.raises(TypeError) as e:
        Leaf()
    out.append(str(e.value))
    match p:
        case Pair(Leaf(v), _):
            out.append(v)
    with pytest.raises(TypeError):
        hash(n)
    return out


@pytest.mark.parametrize("first", FIRST)
def test_a_lazy_class_is_the_eager_dataclass_whatever_touches_it_first(first):
    eager = classes(dataclasses.dataclass)
    lazy = classes(records.dataclass)
    touch(eager, first)
    touch(lazy, first)
    assert behaviour(lazy) == behaviour(eager)


def test_a_lazy_class_is_made_in_two_steps_and_keeps_no_stand_in():
    ns = classes(records.dataclass)
    Node, Base, Leaf = ns["Node"], ns["Base"], ns["Leaf"]
    assert "__serq_lazy__" in Node.__dict__ and "__serq_lazy__" in Base.__dict__

    def waiting(cls):
        return {k for k, v in vars(cls).items() if records._standing(v)}
    Node(0, "n")
    for cls in (Node, Base):      # the base is made with its subclass; their __repr__ and __eq__ wait
        assert waiting(cls) == {"__repr__", "__eq__"} and "__init__" in cls.__dict__
    assert Node(0, "n") == Node(0, "n")
    assert waiting(Node) == set() and "__serq_lazy__" not in Node.__dict__
    assert waiting(Base) == {"__repr__", "__eq__"}
    Leaf(1.0)
    assert waiting(Leaf) == {"__repr__", "__eq__", "__hash__"}
    assert "__setattr__" in Leaf.__dict__ and "__delattr__" in Leaf.__dict__
    hash(Leaf(1.0))
    assert waiting(Leaf) == set() and "__serq_lazy__" not in Leaf.__dict__
    assert "__serq_lazy__" in ns["Pair"].__dict__     # the others wait


def _code(f):
    f = getattr(f, "__wrapped__", f)     # __repr__ is reprlib's wrapper of the made function
    c = f.__code__
    return (f.__name__, f.__qualname__, f.__module__, c.co_code, c.co_consts, c.co_names, c.co_varnames)


# an instance of each class: its fields' values
VALUES = {"Base": {"span": 0}, "Node": {"span": 0, "name": "n", "items": [], "flag": False},
          "Leaf": {"value": 1.0, "tags": (), "note": None}, "Pair": {"left": "l", "right": "r"}}


@pytest.mark.parametrize("first", ["init", "new"])
def test_the_methods_made_later_are_the_eager_decorators_code(first):
    """``__repr__``, ``__eq__`` and ``__hash__`` are made when first called:
    on an instance ``__init__`` made (``init``: the class made), or one
    unpickled in a process where the class is not yet made (``new``)."""
    eager = classes(dataclasses.dataclass)
    lazy = classes(records.dataclass)
    for name in ("Base", "Node", "Leaf", "Pair"):
        cls = lazy[name]
        if first == "init":
            x = cls(**VALUES[name])
        else:
            x = cls.__new__(cls)
            for k, v in VALUES[name].items():
                object.__setattr__(x, k, v)
            assert records._standing(vars(cls)["__init__"])       # the class not made
        assert x == x and repr(x).startswith(name + "(")
        if cls.__hash__ is not None:
            hash(x)
        for attr in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
            a, b = vars(eager[name]).get(attr), vars(cls).get(attr)
            if a is None or b is None:
                assert a is b, (name, attr)
            else:
                assert _code(a) == _code(b), (name, attr)
        assert repr(cls.__dataclass_params__) == repr(eager[name].__dataclass_params__)


def test_a_class_that_writes_a_method_the_decorator_makes_is_refused():
    with pytest.raises(TypeError, match="defines __repr__"):
        @records.dataclass
        class C:
            x: int

            def __repr__(self):
                return "c"


@pytest.mark.parametrize("module", [M, A], ids=["ir.model", "syntax.ast"])
def test_every_class_of_the_ir_and_the_ast_is_made_as_the_eager_decorator_makes_it(module):
    for name, cls in list(vars(module).items()):
        if not isinstance(cls, type) or cls.__module__ != module.__name__ or \
                not dataclasses.is_dataclass(cls):
            continue
        records.make(cls)
        assert not any(records._standing(v) for v in vars(cls).values()), name
        params = cls.__dataclass_params__
        for attr in ("__init__", "__repr__", "__eq__"):
            assert attr in cls.__dict__, (name, attr)
        if params.frozen:
            assert "__hash__" in cls.__dict__ and cls.__hash__ is not None, name
        else:
            assert cls.__hash__ is None, name
        assert cls.__match_args__ == tuple(f.name for f in dataclasses.fields(cls) if f.init), name


def test_checking_a_small_program_makes_few_of_the_classes():
    """The point of the laziness: `serq check` of mg1.sq touches a minority."""
    code = textwrap.dedent("""
        import io, contextlib, dataclasses, sys
        from serq.cli import main
        sys.argv = ["serq", "check", "examples/single-turn/mg1.sq"]
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                main()
            except SystemExit:
                pass
        from serq.ir import model as M
        from serq.syntax import ast as A
        lazy = made = 0
        for m in (M, A):
            for c in vars(m).values():
                if isinstance(c, type) and c.__module__ == m.__name__ and "__dataclass_params__" in dir(c):
                    if "__serq_lazy__" in c.__dict__:
                        lazy += 1
                    else:
                        made += 1
        print(lazy, made)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    lazy, made = map(int, out.split())
    assert made > 0 and lazy > 2 * made, (lazy, made)


def test_a_program_pickled_before_its_classes_are_made_comes_back_equal():
    """A sweep hands the IR to its worker processes by pickling it."""
    code = textwrap.dedent("""
        import pickle, sys
        from serq.link import compile_file
        p = compile_file("examples/multi-turn/vllm.sq", horizon=30.0)
        data = pickle.dumps(p)
        sys.stdout.buffer.write(data)
    """)
    data = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout
    back = textwrap.dedent("""
        import pickle, sys
        from serq.link import compile_file
        from serq.ir import codec
        q = pickle.loads(sys.stdin.buffer.read())      # its classes not yet made in this process
        p = compile_file("examples/multi-turn/vllm.sq", horizon=30.0)
        print(q == p, hash(q.stages) == hash(p.stages), codec.dumps(q) == codec.dumps(p))
    """)
    out = subprocess.run([sys.executable, "-c", back], input=data, capture_output=True, check=True).stdout
    assert out.split() == [b"True", b"True", b"True"]
