"""The machinery of the bad-input catalogue: argument kinds, their mutations, one attempt.

An entry of the catalogue (:mod:`bad_inputs.catalogue`) is one valid call of a public callable,
with each argument wrapped in the *kind* it is (:class:`Data`, :class:`Mask`, :class:`Ids`,
:class:`Flag`, :class:`Count`, ...). Every kind knows the mistakes a reader makes with such an
argument (:meth:`Arg.mutations`), and the call as a whole knows two more: a dimension that is
empty, and a batch dimension of size 1 that must broadcast. Each mutated call is attempted once
(:func:`attempt`) and ends in one :class:`Outcome`:

- ``clear``: a ValueError or TypeError whose message names the argument;
- ``ok``: a finite result, equal to the same call on contiguous (or expanded, or bool-mask)
  copies where the mutation has such a twin;
- ``other``: any other exception, or a ValueError/TypeError naming none of the arguments;
- ``nan``: NaN or an infinity returned from finite input;
- ``accepted``: a mutation that must be refused returned a result, or a result differs from
  its twin; ``modified``: an input was written to; ``cost``: memory followed an argument.

Nothing here names an attnlib module path: the public callables are found by their names in the
modules that ``api.md`` documents (:func:`api`), so the catalogue survives a move of files.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

ROOT = Path(__file__).resolve().parents[2]

REFUSE = "refuse"  # the mutation is a mistake: a clear error is the only right answer
EITHER = "either"  # a clear error, or a finite result (equal to its twin, if it has one)

OUTCOMES = ("clear", "ok", "other", "nan", "accepted", "modified", "cost")
FAILURES = ("other", "nan", "accepted", "modified", "cost")

# Sizes of the book's letters in every valid call: all different, so that a tensor with two
# letters swapped does not fit by chance.
SIZES = {"B": 2, "H": 2, "K": 1, "L": 3, "S": 5, "E": 4, "F": 6, "D": 8, "N": 7, "V": 12,
         "T": 4, "P": 2, "C": 2}
BATCH = ("B", "H")  # letters whose size 1 must broadcast (or be refused)


# ---------------------------------------------------------------------------------------------
# The documented public callables, found from api.md
# ---------------------------------------------------------------------------------------------


def documented_modules(api_md: str | None = None) -> list[str]:
    """The modules whose members api.md documents (``.. automodule::`` with ``:members:``)."""
    text = (ROOT / "api.md").read_text() if api_md is None else api_md
    found = re.findall(r"^[ \t]*\.\. automodule:: (\S+)[ \t]*\n((?:[ \t]+:[^\n]*\n)*)", text,
                       flags=re.MULTILINE)
    return [name for name, options in found if re.search(r"^\s+:members:", options, re.M)]


def _public_members(module: Any) -> list[tuple[str, Any]]:
    """What ``automodule :members:`` documents: ``__all__``, else the names defined there."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items()
                 if not n.startswith("_") and getattr(v, "__module__", None) == module.__name__]
    return [(n, getattr(module, n)) for n in names]


def _is_callable(obj: object) -> bool:
    """Functions and classes; typing aliases (``Literal[...]``) are not callables to catalogue."""
    return inspect.isfunction(obj) or inspect.isclass(obj)


def documented_callables(api_md: str | None = None) -> dict[str, object]:
    """``{name: object}`` for every public function and class that api.md documents, and every
    public method with a docstring that a class defines itself (``Class.method``).

    ``forward`` is not listed apart: calling the module is calling it, and its class's entry
    does. Names are the short ones (``"linear_attention"``, ``"LMCache.nbytes"``); a name
    defined in two modules is qualified with its module's last name (``"seq2seq.greedy_decode"``).
    """
    found: dict[str, list[tuple[str, object]]] = {}
    seen: set[int] = set()
    for module_name in documented_modules(api_md):
        module = importlib.import_module(module_name)
        for name, obj in _public_members(module):
            if not _is_callable(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            found.setdefault(name, []).append((module_name, obj))
            if inspect.isclass(obj):
                for attr, value in vars(obj).items():
                    fn = value.__func__ if isinstance(value, classmethod | staticmethod) else value
                    if (attr.startswith("_") or attr == "forward" or not inspect.isfunction(fn)
                            or not fn.__doc__):
                        continue
                    found.setdefault(f"{name}.{attr}", []).append((module_name, fn))
    result: dict[str, object] = {}
    for name, objects in found.items():
        if len(objects) == 1:
            result[name] = objects[0][1]
        else:
            for module_name, obj in objects:
                result[f"{module_name.rsplit('.', 1)[-1]}.{name}"] = obj
    return result


@cache
def _documented() -> dict[str, object]:
    return documented_callables()


def api(name: str) -> Any:
    """The documented public callable called ``name`` (as :func:`documented_callables` names it).

    ``name#variant`` is the same callable: an entry may have several valid calls.
    """
    try:
        return _documented()[name.split("#")[0]]
    except KeyError:
        raise KeyError(f"api.md documents no public callable {name!r}") from None


# ---------------------------------------------------------------------------------------------
# Argument kinds and their mutations
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutation:
    """One mistake: new values for some arguments, and what must come of it.

    ``twin`` holds the arguments of the call the result must equal (None: no twin, a finite
    result is enough); ``names`` are the argument names an error may name; ``cost`` asks that
    memory stays small whatever the argument's size.
    """

    id: str
    changes: dict[str, object]
    expect: str
    names: tuple[str, ...]
    twin: dict[str, object] | None = None
    cost: bool = False


def _seed_of(text: str) -> int:
    return sum(ord(c) * (i + 1) for i, c in enumerate(text)) % 9973


def sizes_of(dims: str) -> tuple[int, ...]:
    return tuple(int(d) if d.isdigit() else SIZES[d] for d in dims.split())


def noncontiguous(t: Tensor) -> Tensor:
    """The same values in a non-contiguous view (transposed strides, or every other element)."""
    if t.ndim >= 2 and t.shape[-1] > 1 and t.shape[-2] > 1:
        return t.mT.contiguous().mT
    return torch.stack((t, t), dim=-1)[..., 0]


def expand_like(small: Tensor, shape: Sequence[int]) -> Tensor:
    return small.expand(*shape).contiguous()


class Arg:
    """A valid argument value and the kind it is; a kind lists the mistakes made with it."""

    value: Any

    def get(self) -> Any:
        return self.value

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        return []


@dataclass
class Plain(Arg):
    """An argument passed as is and never mutated (a callback, a vocabulary, ...)."""

    value: Any


def _r(mid: str, name: str, value: object) -> Mutation:
    return Mutation(mid, {name: value}, REFUSE, (name,))


def _e(mid: str, name: str, value: object, twin: object = None, has_twin: bool = False,
       cost: bool = False) -> Mutation:
    return Mutation(mid, {name: value}, EITHER, (name,),
                    {name: twin} if has_twin else None, cost)


@dataclass
class Data(Arg):
    """A floating-point tensor of data (queries, keys, inputs, scores, points...).

    ``dims`` names each dimension with the book's letters (or a fixed number). NaN in data is
    propagated, as in PyTorch, so it is not among the mistakes; wrong dtypes, other devices,
    non-tensors are.
    """

    value: Tensor
    dims: str
    optional: bool = False
    half: bool = True  # try float16 with extreme values
    any_real: bool = False  # integer, bool and list input is fine too (a plot)

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        t = self.value
        real = _e if self.any_real else _r
        muts = [
            real("int64", name, t.round().long()),
            real("bool", name, t > 0),
            _r("complex", name, t.to(torch.complex64)),
            real("list", name, t.tolist()),
            _e("float64" if t.dtype != torch.float64 else "float32", name,
               t.to(torch.float32 if t.dtype == torch.float64 else torch.float64)),
            _e("noncontiguous", name, noncontiguous(t), t.clone(), True),
        ]
        if self.half:
            peak = float(t.abs().max()) if t.numel() else 1.0
            muts.append(_e("float16-extreme", name, (t * (300.0 / max(peak, 1e-6))).half()))
        if not self.optional:
            muts.append(_r("None", name, None))
        if call.device_bound(name):
            muts.append(_r("meta-device", name, t.to("meta")))
        for d, letter in enumerate(self.dims.split()):
            if letter in BATCH and t.shape[d] > 1 and call.shares(name, letter):
                small = t.narrow(d, 0, 1)
                muts.append(dataclasses.replace(
                    _e(f"broadcast-{letter}", name, small, expand_like(small, t.shape), True),
                    names=(name, *call.sharers(name, letter))))
        if t.ndim >= 2:
            muts.append(_e("extra-dim", name, t.unsqueeze(0)))
            muts.append(_e("missing-dim", name, t[0]))
        return muts


def _float_twin(mask: Tensor, dtype: torch.dtype) -> Tensor:
    return torch.zeros(mask.shape, dtype=dtype).masked_fill(~mask, -math.inf)


@dataclass
class Mask(Arg):
    """A bool mask (True = may attend or real token); ``additive``: a float mask is added."""

    value: Tensor
    dims: str
    additive: bool = True
    optional: bool = True
    dtype: torch.dtype = torch.float32  # the scores' dtype, for a float mask
    broadcast: bool = True  # a smaller mask broadcasts (False: the result follows its shape)

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        m = self.value
        bias = _float_twin(m, self.dtype)
        muts = [
            _r("int64", name, m.long()),
            _r("list", name, m.tolist()),
            _r("float64-when-scores-float32" if self.dtype != torch.float64 else "float32",
               name, bias.to(torch.float32 if self.dtype == torch.float64 else torch.float64)),
            _e("all-false", name, torch.zeros_like(m)),
            _e("noncontiguous", name, noncontiguous(m), m.clone(), True),
        ]
        nan, pinf = bias.clone(), bias.clone()
        nan.view(-1)[0], pinf.view(-1)[0] = math.nan, math.inf
        muts += [_r("float-nan", name, nan), _r("float-plus-inf", name, pinf)]
        if self.additive:
            muts.append(_e("float-additive", name, bias, m.clone(), True))
            muts.append(_e("float-0-1", name, m.to(self.dtype)))
        else:
            muts.append(_r("float-additive", name, bias))
            muts.append(_r("float-0-1", name, m.to(self.dtype)))
        if not self.optional:
            muts.append(_r("None", name, None))
        if call.device_bound(name):
            muts.append(_r("meta-device", name, m.to("meta")))
        # shapes that broadcast to the full one, and shapes that do not
        b = self.broadcast
        for k in range(1, m.ndim):
            small = m[(0,) * k]
            muts.append(_e(f"drop-{k}-leading", name, small, expand_like(small, m.shape), b))
        for d in range(m.ndim):
            if m.shape[d] > 1:
                small = m.narrow(d, 0, 1)
                muts.append(_e(f"size-1-dim-{d}", name, small, expand_like(small, m.shape), b))
        if m.ndim:
            first = m.reshape(-1)[0]
            muts.append(_e("0-d", name, first.clone(), expand_like(first, m.shape), b))
        if b:
            muts.append(_r("last-dim-plus-1", name, torch.cat((m, m[..., :1]), dim=-1)))
            muts.append(_r("enlarging", name, m.unsqueeze(0).expand(7, *m.shape).contiguous()))
        return muts


@dataclass
class Ids(Arg):
    """An integer tensor of token ids in [0, ``vocab``) (``signed``: in (-vocab, vocab))."""

    value: Tensor
    dims: str
    vocab: int | None  # None: no upper bound (positions)
    optional: bool = False
    list_ok: bool = False  # a list of ints is accepted as well
    signed: bool = False  # negative ids are right too (quantization codes)

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        t = self.value
        high, low = t.clone(), t.clone()
        low.view(-1)[-1] = -1
        muts = [] if self.signed else [_r("id-minus-1", name, low)]
        if self.vocab is not None:
            high.view(-1)[-1] = self.vocab
            muts.append(_r(f"id-{self.vocab}", name, high))
        muts += [
            _r("float", name, t.float()),
            _r("bool", name, t > 0),
            _e("list", name, t.tolist(), t.clone(), True) if self.list_ok
            else _r("list", name, t.tolist()),
            _e("int32", name, t.int(), t.clone(), True),
            _e("noncontiguous", name, noncontiguous(t), t.clone(), True),
        ]
        if not self.optional:
            muts.append(_r("None", name, None))
        if call.device_bound(name):
            muts.append(_r("meta-device", name, t.to("meta")))
        if t.ndim >= 2:
            muts.append(_e("missing-dim", name, t[0]))
        return muts


@dataclass
class Lengths(Arg):
    """An integer tensor (B,) of lengths in [minimum, ``maximum``]."""

    value: Tensor
    maximum: int | None
    minimum: int = 1
    optional: bool = False
    dims: str = "B"
    any_shape: bool = False  # elementwise: a 2-D tensor of lengths is fine

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        t = self.value
        neg = t.clone()
        neg[0] = -1
        muts = [_r("negative", name, neg)]
        if self.maximum is not None:
            long = t.clone()
            long[0] = self.maximum + 1
            muts.append(_r("too-long", name, long))
        muts += [
            _r("float", name, t.float()),
            _r("list", name, t.tolist()),
            _r("2-D", name, t[None]) if not self.any_shape else _e("2-D", name, t[None]),
            _e("int32", name, t.int(), t.clone(), True),
        ]
        if call.shares(name, "B"):  # another argument has the batch: the lengths must fit it
            muts.append(_r("one-more-row", name, torch.cat((t, t[:1]))))
        if self.minimum > 0:
            zero = t.clone()
            zero[0] = 0
            muts.append(_r("zero", name, zero))
        if not self.optional:
            muts.append(_r("None", name, None))
        # On another device than the model's, or with no values to check at all: refused.
        muts.append(_r("meta-device", name, t.to("meta")))
        return muts


def _tensor_of_two(name: str, value: float) -> Mutation:
    """A scalar argument given as a tensor of two (valid) values: refused, not broadcast."""
    return _r("tensor-of-2", name, torch.tensor([value, value]))


def has_accelerator() -> bool:
    accelerator = getattr(torch, "accelerator", None)
    return accelerator is not None and bool(accelerator.is_available())


@dataclass
class Device(Arg):
    """Where a function creates its result, or a module its parameters: a ``torch.device``, a
    device string or an accelerator index (None: PyTorch's default)."""

    value: Any = None
    optional: bool = True

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        muts = [_r("not-a-device", name, "gpu0"), _r("float", name, 0.5), _r("bool", name, True),
                _r("negative-index", name, -1), _r("absent-device", name, "cuda:99"),
                _e("str-cpu", name, "cpu", self.value, True)]
        # an index of the accelerator: right on a machine that has one, refused on one without
        muts.append((_e if has_accelerator() else _r)("index-0", name, 0))
        if not self.optional:
            muts.append(_r("None", name, None))
        return muts


@dataclass
class Flag(Arg):
    """A bool: a truthy string or an int is refused, not read as True."""

    value: bool

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        return [_r("str-no", name, "no"), _r("int-1", name, 1), _r("None", name, None),
                _e("flipped", name, not self.value)]


@dataclass
class Count(Arg):
    """An int >= ``minimum`` (<= ``maximum``); ``cost``: time and memory must not follow it."""

    value: int | None
    minimum: int | None = 1
    maximum: int | None = None
    optional: bool = False
    cost: bool = False
    huge: int = 4096

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        v = 1 if self.value is None else self.value
        muts = [_r("float", name, v + 0.5), _r("bool", name, True), _r("str", name, str(v)),
                _r("tensor-float", name, torch.tensor(v + 0.5)), _tensor_of_two(name, v),
                _r("int64-overflow", name, 2**70)]
        if self.minimum is None or self.minimum < 0:
            muts.append(_r("int64-overflow-negative", name, -(2**70)))
        if self.minimum is not None:
            muts.append(_r(f"below-{self.minimum}", name, self.minimum - 1))
        if self.maximum is not None:
            muts.append(_r(f"above-{self.maximum}", name, self.maximum + 1))
        if not self.optional:
            muts.append(_r("None", name, None))
        if self.cost:
            muts.append(_e(f"huge-{self.huge}", name, self.huge, cost=True))
        return muts


@dataclass
class Positive(Arg):
    """A finite number > 0 (a scale, a bandwidth, a rate, a temperature)."""

    value: float | None
    optional: bool = False

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        muts = [_r(f"value-{v}", name, v) for v in (0.0, -1.0, math.nan, math.inf)]
        muts += [_r("bool", name, True), _r("str", name, "1.0"),
                 _tensor_of_two(name, 1.0 if self.value is None else self.value)]
        if not self.optional:
            muts.append(_r("None", name, None))
        return muts


@dataclass
class Prob(Arg):
    """A probability in [0, 1) (dropout, label smoothing)."""

    value: float

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        return [_r(f"value-{v}", name, v) for v in (-0.1, 1.0, math.nan)] + [
            _r("bool", name, True), _r("str", name, "0.1"), _r("None", name, None),
            _tensor_of_two(name, self.value)]


@dataclass
class Real(Arg):
    """A finite number >= ``minimum`` (if given)."""

    value: float
    minimum: float | None = None
    optional: bool = False

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        muts = [_r(f"value-{v}", name, v) for v in (math.nan, math.inf)]
        muts += [_r("bool", name, True), _r("str", name, "1.0"), _tensor_of_two(name, self.value)]
        if self.minimum is not None:
            muts.append(_r("below-minimum", name, self.minimum - 1.0))
        if not self.optional:
            muts.append(_r("None", name, None))
        return muts


@dataclass
class Choice(Arg):
    """One of a few strings."""

    value: str

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        return [_r("unknown", name, "nope"), _r("int", name, 1), _r("None", name, None)]


@dataclass
class DType(Arg):
    """A floating-point dtype."""

    value: torch.dtype

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        return [_r("int64", name, torch.int64), _r("bool", name, torch.bool),
                _r("complex", name, torch.complex64), _r("str", name, "float32"),
                _e("float16", name, torch.float16)]


@dataclass
class Obj(Arg):
    """An object of a given class (a model, a config, a cache): another object is refused.

    ``fresh``: ``value`` is a factory called for every attempt (a model that training changes).
    """

    value: Any
    optional: bool = False
    others: tuple[Any, ...] = ()
    fresh: bool = False
    any_module: bool = False  # any nn.Module is right (an nn.Linear too)

    def get(self) -> Any:
        return self.value() if self.fresh else self.value

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        muts = [_r("str", name, "model")]
        if not self.any_module:
            muts.append(_r("a-Linear", name, nn.Linear(1, 1)))
        muts += [_r(f"other-{i}", name, o) for i, o in enumerate(self.others)]
        if not self.optional:
            muts.append(_r("None", name, None))
        return muts


@dataclass
class Seq(Arg):
    """A list argument (sentences, lengths, titles, pairs): a bare number, None, a string for a
    list of strings, or an item of the wrong type is refused; an empty list may be refused."""

    value: Any
    item: str = "str"  # "str", "int", "float" or "any"
    minimum: float | None = None
    optional: bool = False

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        v = list(self.value)
        muts = [_r("a-number", name, 3), _e("empty", name, [])]
        if not self.optional:
            muts.append(_r("None", name, None))
        if self.item == "str" and v:
            muts.append(_r("a-bare-string", name, " ".join(map(str, v))))
        wrong = {"str": 3.5, "int": "x", "float": "x"}.get(self.item)
        if wrong is not None and v:
            muts.append(_r("an-item-of-another-type", name, [wrong, *v[1:]]))
        if self.item in ("int", "float") and v:
            muts.append(_r("a-nan-item" if self.item == "float" else "a-float-item", name,
                           [math.nan if self.item == "float" else v[0] + 0.5, *v[1:]]))
        if self.minimum is not None and v:
            muts.append(_r("an-item-below-the-minimum", name, [self.minimum - 1, *v[1:]]))
        return muts


@dataclass
class Func(Arg):
    """A callable argument: a number or None in its place is refused."""

    value: Any
    optional: bool = False

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        muts = [_r("int", name, 3)]
        if not self.optional:
            muts.append(_r("None", name, None))
        return muts


@dataclass
class Text(Arg):
    """A string argument (a path, a title): a number in its place is refused (a float: an int
    would be taken for a file descriptor by ``open``, and closed)."""

    value: Any
    optional: bool = False

    def mutations(self, name: str, call: Call) -> list[Mutation]:
        muts = [_r("a-number", name, 3.5)]
        if not self.optional:
            muts.append(_r("None", name, None))
        return muts


@dataclass
class Bad:
    """A mistake one entry knows of (cache misuse, a prompt too long...): new arguments, or a
    whole call of its own (``call``), and what must come of it."""

    id: str
    changes: dict[str, object] = field(default_factory=dict)
    expect: str = REFUSE
    names: tuple[str, ...] = ()
    call: Callable[[], object] | None = None
    twin: Callable[[], object] | None = None


# ---------------------------------------------------------------------------------------------
# A call and its attempts
# ---------------------------------------------------------------------------------------------


@dataclass
class Call:
    """One valid call: ``fn(**args)``, the arguments wrapped in their kinds.

    ``module``: the callable holds parameters (or a model argument does), so a tensor on
    another device is a mistake even when it is the only tensor argument. ``allow_inf``: -inf
    is a defined value of the result (a float mask, the log of a zero kernel).
    """

    fn: Callable[..., object]
    args: dict[str, object]
    module: bool = False
    allow_inf: bool = False
    bad: list[Bad] = field(default_factory=list)
    compare: bool = True  # False: the result depends on the machine (a time), no twin
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # names an error may use

    def values(self) -> dict[str, object]:
        return {k: v.get() if isinstance(v, Arg) else v for k, v in self.args.items()}

    def tensors(self) -> list[str]:
        return [k for k, v in self.args.items()
                if isinstance(v, Data | Mask | Ids | Lengths) and v.value is not None]

    def shares(self, name: str, letter: str) -> bool:
        """Whether another tensor argument has the letter (so a size 1 there broadcasts)."""
        return any(isinstance(v, Data | Mask | Ids | Lengths) and k != name
                   and v.value is not None and letter in v.dims.split()
                   for k, v in self.args.items())

    def sharers(self, name: str, letter: str) -> tuple[str, ...]:
        """The other tensor arguments that have the letter: an error may name them instead."""
        return tuple(k for k, v in self.args.items()
                     if isinstance(v, Data | Mask | Ids | Lengths) and k != name
                     and v.value is not None and letter in v.dims.split())

    def device_bound(self, name: str) -> bool:
        return self.module or len(self.tensors()) >= 2

    def mutations(self) -> list[Mutation]:
        muts: list[Mutation] = []
        for name, arg in self.args.items():
            if isinstance(arg, Arg):
                muts += [dataclasses.replace(m, id=f"{name}:{m.id}")
                         for m in arg.mutations(name, self)]
        muts += self._empty_dims()
        for bad in self.bad:
            if bad.call is None:
                muts.append(Mutation(f"bad:{bad.id}", bad.changes, bad.expect,
                                     bad.names or tuple(bad.changes)))
        if not self.compare:
            muts = [dataclasses.replace(m, twin=None) for m in muts]
        if self.aliases:
            muts = [dataclasses.replace(m, names=(*m.names, *(a for n in m.names
                                                             for a in self.aliases.get(n, ()))))
                    for m in muts]
        return muts

    def sweep(self) -> list[Mutation]:
        """The NaN sweep: every data tensor at once scaled to |x| = 1e4, set to +20 or -20
        everywhere, or in float16; a finite result or a clear error is the only right end."""
        data = {k: v.value for k, v in self.args.items()
                if isinstance(v, Data) and v.value is not None and v.value.numel()}
        if not data:
            return []
        names = tuple(data)

        def scaled(t: Tensor) -> Tensor:
            return t * (1e4 / max(float(t.abs().max()), 1e-12))

        variants = {
            "|x|=1e4": {k: scaled(t) for k, t in data.items()},
            "all+20": {k: torch.full_like(t, 20.0) for k, t in data.items()},
            "all-20": {k: torch.full_like(t, -20.0) for k, t in data.items()},
            "float16": {k: t.half() for k, t in data.items()},
            "float16-|x|=300": {k: (t * (300 / max(float(t.abs().max()), 1e-12))).half()
                                for k, t in data.items()},
            "float16-all+20": {k: torch.full_like(t, 20.0).half() for k, t in data.items()},
        }
        return [Mutation(f"sweep:{vid}", changes, EITHER, names)
                for vid, changes in variants.items()]

    def _empty_dims(self) -> list[Mutation]:
        """Each letter of the shapes in turn empty (size 0) in every tensor that has it."""
        letters: dict[str, list[tuple[str, int]]] = {}
        for name, arg in self.args.items():
            if isinstance(arg, Data | Mask | Ids) and arg.value is not None:
                for d, letter in enumerate(arg.dims.split()):
                    if not letter.isdigit():
                        letters.setdefault(letter, []).append((name, d))
        muts = []
        for letter, places in letters.items():
            changes: dict[str, object] = {}
            for name, d in places:
                base = changes.get(name, self.values()[name])
                assert isinstance(base, Tensor)
                changes[name] = base.narrow(d, 0, 0)
            muts.append(Mutation(f"empty-{letter}", changes, EITHER,
                                 tuple(dict.fromkeys(n for n, _ in places))))
        return muts


@dataclass
class Entry:
    """The catalogue's entry for one documented callable: ``build()`` makes its valid call.

    ``exempt`` says why a callable gets no mutations (a container of results that attnlib
    builds itself and never reads back from a reader); it still needs an entry.
    """

    name: str
    build: Callable[[], Call] | None = None
    exempt: str = ""


REGISTRY: list[Entry] = []


def entry(name: str) -> Callable[[Callable[[], Call]], Callable[[], Call]]:
    """Register ``build`` as the entry of the documented callable ``name``."""

    def register(build: Callable[[], Call]) -> Callable[[], Call]:
        REGISTRY.append(Entry(name, build))
        return build

    return register


def exempt(reason: str, *names: str) -> None:
    """Entries for containers: documented callables with nothing to validate."""
    REGISTRY.extend(Entry(name, exempt=reason) for name in names)


@dataclass(frozen=True)
class Outcome:
    kind: str
    detail: str = ""


def numbers(result: object, depth: int = 0) -> list[Tensor]:
    """Every number in ``result`` as a tensor: nested tuples, lists, dicts, dataclasses, modules."""
    if depth > 6:
        return []
    if isinstance(result, Tensor):
        return [result.detach()]
    if isinstance(result, bool | int | float):
        return [torch.tensor(float(result), dtype=torch.float64)]
    if isinstance(result, nn.Module):
        return [p.detach() for p in result.state_dict().values()]
    if isinstance(result, tuple | list):
        return [t for item in result for t in numbers(item, depth + 1)]
    if isinstance(result, dict):
        return [t for item in result.values() for t in numbers(item, depth + 1)]
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return [t for f in dataclasses.fields(result)
                for t in numbers(getattr(result, f.name), depth + 1)]
    return []


def _strings(result: object, depth: int = 0) -> list[str]:
    if depth > 6:
        return []
    if isinstance(result, str):
        return [result]
    if isinstance(result, tuple | list):
        return [s for item in result for s in _strings(item, depth + 1)]
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return [s for f in dataclasses.fields(result)
                for s in _strings(getattr(result, f.name), depth + 1)]
    return []


def non_finite(result: object, allow_inf: bool) -> str:
    for t in numbers(result):
        if t.device.type == "meta" or not (t.is_floating_point() or t.is_complex()):
            continue
        if bool(torch.isnan(t).any()):
            return f"NaN in a result of shape {tuple(t.shape)}"
        if not allow_inf and not bool(torch.isfinite(t).all()):
            return f"inf in a result of shape {tuple(t.shape)}"
        if allow_inf and bool(torch.isposinf(t).any()):
            return f"+inf in a result of shape {tuple(t.shape)}"
    return ""


def differs(a: object, b: object) -> str:
    """Why two results differ, or '' if they agree (to float tolerance)."""
    na, nb = numbers(a), numbers(b)
    if len(na) != len(nb):
        return f"{len(na)} tensors against {len(nb)}"
    for x, y in zip(na, nb, strict=True):
        if x.shape != y.shape:
            return f"shape {tuple(x.shape)} against {tuple(y.shape)}"
        if x.is_floating_point() or y.is_floating_point():
            loose = torch.float16 in (x.dtype, y.dtype) or torch.bfloat16 in (x.dtype, y.dtype)
            if not torch.allclose(x.double(), y.double(), rtol=1e-2 if loose else 1e-5,
                                  atol=1e-2 if loose else 1e-6, equal_nan=True):
                gap = (x.double() - y.double()).abs().nan_to_num(nan=math.inf).max()
                return f"values differ by up to {float(gap):.3g}"
        elif not torch.equal(x, y):
            return "integer values differ"
    if _strings(a) != _strings(b):
        return "strings differ"
    return ""


def _names_argument(message: str, names: Sequence[str]) -> bool:
    return any(re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", message) for n in names)


def _seeded(fn: Callable[..., object], kwargs: dict[str, object]) -> object:
    """``fn(**kwargs)`` under seed 0 (the same weights for a call and its twin), the global
    random state left as it was."""
    generator = torch.default_generator
    state = generator.get_state()
    generator.manual_seed(0)
    try:
        return fn(**kwargs)
    finally:
        generator.set_state(state)


def _snapshot(values: dict[str, object]) -> dict[str, Tensor]:
    return {k: v.clone() for k, v in values.items()
            if isinstance(v, Tensor) and v.device.type != "meta"}


def _close_figures() -> None:
    import sys

    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


MEMORY_LIMIT = 16 * 2**20  # bytes a call of the catalogue's small sizes may allocate


def attempt(call: Call, mutation: Mutation) -> Outcome:
    """Make the mutated call and say how it ended."""
    kwargs = {**call.values(), **mutation.changes}
    before = _snapshot(kwargs)
    started = time.perf_counter()
    try:
        if mutation.cost:
            box: list[object] = []
            peak = api("peak_memory")(lambda: box.append(_seeded(call.fn, kwargs)))
            result = box[0]
        else:
            result = _seeded(call.fn, kwargs)
    except (ValueError, TypeError) as error:
        message = str(error)
        if _names_argument(message, mutation.names):
            return Outcome("clear")
        return Outcome("other", f"{type(error).__name__} naming none of "
                                f"{', '.join(mutation.names)}: {message[:160]}")
    except Exception as error:
        return Outcome("other", f"{type(error).__name__}: {str(error)[:160]}")
    finally:
        _close_figures()
    for k, old in before.items():
        new = kwargs[k]
        if isinstance(new, Tensor) and not torch.equal(old, new) and not (
                old.is_floating_point() and torch.equal(old.isnan(), new.isnan())
                and torch.equal(old.nan_to_num(), new.nan_to_num())):
            return Outcome("modified", f"{k} was written to")
    if mutation.expect == REFUSE:
        return Outcome("accepted", "returned a result")
    bad = non_finite(result, call.allow_inf)
    if bad:
        return Outcome("nan", bad)
    if mutation.cost:
        seconds = time.perf_counter() - started
        if peak > MEMORY_LIMIT:
            return Outcome("cost", f"{peak / 2**20:.0f} MiB allocated ({seconds:.2f} s)")
    if mutation.twin is not None:
        twin_kwargs = {**call.values(), **mutation.twin}
        try:
            expected = _seeded(call.fn, twin_kwargs)
        except Exception as error:
            return Outcome("other", f"the twin call failed: {type(error).__name__}: {error}")
        finally:
            _close_figures()
        why = differs(result, expected)
        if why:
            return Outcome("accepted", f"differs from its twin: {why}")
    return Outcome("ok")


def attempt_bad_call(call: Call, bad: Bad) -> Outcome:
    """An entry's own mistake with a call of its own."""
    assert bad.call is not None
    fn = bad.call
    wrapped = Call(lambda: fn(), {}, allow_inf=call.allow_inf)
    twin = None
    if bad.twin is not None:
        twin_fn = bad.twin
        wrapped = Call(lambda which=False: (twin_fn if which else fn)(), {},
                       allow_inf=call.allow_inf)
        twin = {"which": True}
    mutation = Mutation(f"bad:{bad.id}", {}, bad.expect, bad.names, twin)
    return attempt(wrapped, mutation)


def outcomes(call: Call) -> Iterator[tuple[str, Outcome]]:
    """Every mutation of ``call`` and how it ended."""
    yield "valid", attempt(call, Mutation("valid", {}, EITHER, ()))
    for mutation in [*call.mutations(), *call.sweep()]:
        yield mutation.id, attempt(call, mutation)
    for bad in call.bad:
        if bad.call is not None:
            yield f"bad:{bad.id}", attempt_bad_call(call, bad)


# ---------------------------------------------------------------------------------------------
# Helpers for writing entries
# ---------------------------------------------------------------------------------------------


def X(dims: str, scale: float = 1.0, dtype: torch.dtype = torch.float32, **kw: Any) -> Data:
    """Data of the letters' sizes, standard normal times ``scale``, seeded by its dims."""
    gen = torch.Generator().manual_seed(_seed_of(dims))
    return Data((torch.randn(sizes_of(dims), generator=gen) * scale).to(dtype), dims, **kw)


def M(dims: str, dtype: torch.dtype = torch.float32, **kw: Any) -> Mask:
    """A bool mask of the letters' sizes: random, but every row keeps its first key."""
    gen = torch.Generator().manual_seed(_seed_of(dims) + 1)
    shape = sizes_of(dims)
    mask = torch.rand(shape, generator=gen) < 0.6
    if mask.ndim:
        mask[..., 0] = True
    return Mask(mask, dims, dtype=dtype, **kw)


def I(dims: str, vocab: int, low: int = 0, **kw: Any) -> Ids:  # noqa: E743 - the book's letter
    gen = torch.Generator().manual_seed(_seed_of(dims) + 2)
    high = 50 if vocab is None else vocab
    return Ids(torch.randint(low, high, sizes_of(dims), generator=gen), dims, vocab, **kw)


def seeded(build: Callable[[], Any]) -> Any:
    """``build()`` under seed 0, the global random state left as it was."""
    return _seeded(build, {})
