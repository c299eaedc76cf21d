"""Issue 34: four kinds of bad input that ended in PyTorch's own error, and a legal way to decode
a fixed number of tokens.

The catalogue (test_catalogue.py) makes each of the four mistakes on every argument of its kind:
a scalar given as a tensor of two values (``tensor-of-2`` on every :class:`Count`,
:class:`Positive`, :class:`Real` and :class:`Prob`), device arguments (:class:`Device`, and
``meta-device`` on every :class:`Lengths`), a module built with an integer or bool ``dtype``
(:class:`DType`, on every module's ``#construction`` entry) and an int too large for int64
(``int64-overflow`` on every :class:`Count`). Here: the issue's examples with the whole message
(the argument, what it got, what was expected), and the meta-test that no documented parameter of
those kinds escapes the catalogue.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from .catalogue import ENTRIES
from .harness import (
    Arg,
    Count,
    Device,
    DType,
    Lengths,
    Positive,
    Prob,
    Real,
    api,
    documented_callables,
    has_accelerator,
    seeded,
)


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def message(error: type[Exception], call: Callable[[], object]) -> str:
    """The message of the ``error`` (exactly that type) that ``call()`` raises."""
    with pytest.raises(error) as caught:
        call()
    assert type(caught.value) is error, f"{type(caught.value).__name__}: {caught.value}"
    return str(caught.value)


def says(text: str, *parts: str) -> None:
    for part in parts:
        assert part in text, f"{part!r} not in: {text}"


def _lm_config(**changes: Any) -> Any:
    return api("DecoderLMConfig")(**{"vocab_size": 12, "d_model": 8, "num_heads": 2,
                                     "num_kv_heads": 1, "num_layers": 1, "d_ff": 16,
                                     "max_len": 12, **changes})


def _tf_config() -> Any:
    return api("TransformerConfig")(10, 12, d_model=8, num_heads=2, num_encoder_layers=1,
                                    num_decoder_layers=1, d_ff=16, dropout=0.0, max_len=8)


TWO = torch.tensor([1.0, 2.0])
Q, K, V = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)

# --- 1. a scalar given as a tensor of several values ---------------------------------------------

SCALARS: dict[str, tuple[str, Callable[[], object]]] = {
    "temperature": ("temperature", lambda: api("softmax_with_temperature")(torch.randn(2, 5),
                                                                           TWO)),
    "scale": ("scale", lambda: api("scaled_dot_product_attention")(Q, K, V, scale=TWO)),
    "base": ("base", lambda: api("sinusoidal_encoding")(6, 8, base=TWO)),
    "rope_base": ("rope_base", lambda: api("DecoderLMConfig")(
        vocab_size=12, d_model=8, num_heads=2, num_kv_heads=1, num_layers=1, d_ff=16,
        max_len=12, rope_base=TWO)),
    "rope-base-of-a-layer": ("rope_base", lambda: api("CausalSelfAttention")(8, 2, 1,
                                                                              rope_base=TWO)),
    "bandwidth": ("bandwidth", lambda: api("kernel_scores")(Q, K, TWO)),
    "lr": ("lr", lambda: api("train_lm")(seeded(lambda: api("DecoderLM")(_lm_config())),
                                         lambda step: (torch.ones(1, 2, dtype=torch.long),) * 2,
                                         steps=1, lr=TWO)),
}


@pytest.mark.parametrize("case", SCALARS, ids=list(SCALARS))
def test_a_scalar_given_as_a_tensor_of_two_values_names_the_shape(case: str) -> None:
    """Before: "The size of tensor a (5) must match the size of tensor b (2)", or "only one
    element tensors can be converted to Python scalars"."""
    name, call = SCALARS[case]
    text = message(ValueError, call)
    assert re.match(rf"{name} must be one number \(a Python number or a 0-d tensor\), got "
                    rf"Tensor of shape \(2\)", text), text


def test_a_0d_tensor_is_still_one_number() -> None:
    scores = torch.randn(2, 5)
    assert torch.equal(api("softmax_with_temperature")(scores, torch.tensor(0.5)),
                       api("softmax_with_temperature")(scores, 0.5))


def test_an_int_argument_given_as_a_tensor_says_so() -> None:
    says(message(TypeError, lambda: api("causal_mask")(torch.tensor([3, 4]))),
         "L must be an int, got a torch.int64 tensor of shape (2)")


# --- 2. device arguments ------------------------------------------------------------------------


def test_a_string_that_is_no_device() -> None:
    """Before: RuntimeError "Invalid device string: 'gpu0'"."""
    for call in (lambda: api("causal_mask")(3, device="gpu0"),
                 lambda: api("sinusoidal_encoding")(6, 8, device="gpu0"),
                 lambda: api("MultiHeadAttention")(8, 2, device="gpu0"),
                 lambda: api("Transformer")(_tf_config(), device="gpu0")):
        says(message(ValueError, call),
             "device must name a device, such as 'cpu', 'cuda:0' or 'meta', got 'gpu0'")


@pytest.mark.skipif(has_accelerator(), reason="this machine has an accelerator: 0 is a device")
def test_an_index_on_a_machine_without_an_accelerator() -> None:
    """Before: RuntimeError "Cannot access accelerator device when none is available"."""
    for call in (lambda: api("causal_mask")(3, device=0),
                 lambda: api("MultiHeadAttention")(8, 2, device=0)):
        says(message(ValueError, call), "device = 0 is an index on an accelerator, but this "
                                        "machine has no accelerator; expected an index >= 0 or a "
                                        "device such as 'cpu'")


def test_a_device_this_machine_does_not_have() -> None:
    """Before (without CUDA): AssertionError "Torch not compiled with CUDA enabled"."""
    says(message(ValueError, lambda: api("sliding_window_mask")(3, 2, device="cuda:99")),
         "device is 'cuda:99', a device this machine does not have (it has ")


def test_other_kinds_of_device_value() -> None:
    says(message(TypeError, lambda: api("causal_mask")(3, device=0.5)),
         "device must be a torch.device, a device string such as 'cpu' or an accelerator "
         "index or None, got float")
    says(message(ValueError, lambda: api("causal_mask")(3, device=-1)),
         "device = -1 is an index on an accelerator, but this machine has ")


def test_the_devices_of_a_machine_with_one_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine with one CUDA device (simulated: only the checks run, nothing is made)."""
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(torch.accelerator, "current_accelerator", lambda: torch.device("cuda"))
    monkeypatch.setattr(torch.accelerator, "device_count", lambda: 1)
    check = api("check_device_arg")
    assert check("device", 0) == torch.device("cuda", 0)
    assert check("device", "cuda") == torch.device("cuda")
    assert check("device", torch.device("cuda:0")) == torch.device("cuda:0")
    for bad in ("cuda:1", 3, "mps"):
        says(message(ValueError, lambda b=bad: check("device", b)), "a device this machine does "
             "not have (it has the accelerator 'cuda' with 1 device(s))")
    says(message(ValueError, lambda: check("device", -1)), "device = -1 is an index on an "
         "accelerator, but this machine has the accelerator 'cuda'; expected an index >= 0")


def test_the_devices_a_machine_has_still_work() -> None:
    for device in (None, "cpu", torch.device("cpu"), "meta"):
        mask = api("causal_mask")(2, 3, device=device)
        assert mask.shape == (2, 3)
    assert api("MultiHeadAttention")(8, 2, device="meta").q_proj.weight.is_meta


def test_lengths_on_the_meta_device() -> None:
    """Before: RuntimeError "Tensor.item() cannot be called on meta tensors"."""
    meta = torch.tensor([2, 3], device="meta")
    for call in (lambda: api("lengths_to_mask")(meta, 3), lambda: api("padding_mask")(meta, 3)):
        says(message(ValueError, call), "lengths is on the meta device, which holds no values, "
                                        "but lengths in [0, max_len = 3] must be checked")
    says(message(ValueError, lambda: api("gnmt_length_penalty")(meta, 0.6)),
         "length is on the meta device")


# --- 3. a module built with an integer or bool dtype --------------------------------------------

MODULES: dict[str, Callable[[torch.dtype], object]] = {
    "MultiHeadAttention": lambda dtype: api("MultiHeadAttention")(8, 2, dtype=dtype),
    "GroupedQueryAttention": lambda dtype: api("GroupedQueryAttention")(8, 2, 1, dtype=dtype),
    "Transformer": lambda dtype: api("Transformer")(_tf_config(), dtype=dtype),
    "DecoderLM": lambda dtype: api("DecoderLM")(_lm_config(), dtype=dtype),
    "DeltaNet": lambda dtype: api("DeltaNet")(8, 2, dtype=dtype),
}


@pytest.mark.parametrize("name", MODULES)
@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.complex64])
def test_a_module_with_an_integer_or_bool_dtype(name: str, dtype: torch.dtype) -> None:
    """Before: RuntimeError "Only Tensors of floating point and complex dtype can require
    gradients" (and complex parameters were accepted)."""
    says(message(TypeError, lambda: MODULES[name](dtype)),
         f"dtype must be a floating-point torch.dtype or None (e.g. torch.float32), got {dtype}")


def test_a_module_with_a_floating_dtype_is_built() -> None:
    mha = api("MultiHeadAttention")(8, 2, dtype=torch.float64)
    assert mha.q_proj.weight.dtype == torch.float64


# --- 4. an int too large for int64 --------------------------------------------------------------

HUGE = 2**70

INT64: dict[str, tuple[str, Callable[[], object]]] = {
    "causal_mask": ("L", lambda: api("causal_mask")(HUGE)),
    "lengths_to_mask": ("max_len", lambda: api("lengths_to_mask")(torch.tensor([1, 2]), HUGE)),
    "sinusoidal_encoding": ("max_len", lambda: api("sinusoidal_encoding")(HUGE, 8)),
    "copy_task": ("n", lambda: api("copy_task")(HUGE)),
    "pad_batch": ("pad_id", lambda: api("pad_batch")([[1, 2], [3]], pad_id=HUGE)),
    "check_int minimum": ("minimum", lambda: api("check_int")("x", 3, minimum=-HUGE)),
}


@pytest.mark.parametrize("case", INT64, ids=list(INT64))
def test_an_int_too_large_for_int64(case: str) -> None:
    """Before: OverflowError "int too big to convert", or torch's "Overflow when unpacking long
    long" naming no argument."""
    name, call = INT64[case]
    says(message(ValueError, call), f"{name} must fit in int64 (-2**63 to 2**63 - 1), got ")


# --- the catalogue tries each kind on every parameter of that kind ------------------------------

#: The kinds that try the mistakes of each kind of parameter (by its annotation).
KINDS: dict[str, tuple[type[Arg], ...]] = {
    "int": (Count,), "float": (Positive, Real, Prob), "device": (Device,), "dtype": (DType,)}

#: Parameters of those kinds that no entry tries, each with its reason.
NOT_TRIED = {
    ("QuantizedLMCache", "length"): "the number of cached positions, state that the model "
                                    "fills (as LMCache's, an exempt container)",
}


def parameter_kind(parameter: inspect.Parameter) -> str | None:
    """``"int"``, ``"float"``, ``"device"`` or ``"dtype"`` by the annotation, or None."""
    annotation = parameter.annotation
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__",
                                                                  str(annotation))
    parts = {part.strip() for part in text.split("|")} - {"None"}
    if parameter.name == "device" or "torch.device" in parts:
        return "device"
    if "torch.dtype" in parts:
        return "dtype"
    if parts == {"int"}:
        return "int"
    if "float" in parts and parts <= {"float", "int", "Tensor"}:
        return "float"
    return None


def untried(entries: list[Any]) -> dict[tuple[str, str], str]:
    """``{(callable, parameter): kind}`` for every scalar, device or dtype parameter of a
    documented callable (a class: its constructor) that no entry gives an argument of its kind."""
    exempt = {e.name for e in entries if e.exempt}
    tried: dict[str, dict[str, set[type]]] = {}
    for e in entries:
        if e.build is not None:
            names = tried.setdefault(e.name.split("#")[0], {})
            for arg_name, arg in e.build().args.items():
                names.setdefault(arg_name, set()).add(type(arg))
    missing = {}
    for name, obj in documented_callables().items():
        if name in exempt:
            continue
        try:
            parameters = inspect.signature(obj.__init__ if inspect.isclass(obj)  # type: ignore[misc]
                                           else obj).parameters
        except (TypeError, ValueError):
            continue
        for parameter in parameters.values():
            kind = parameter_kind(parameter)
            if kind is None or parameter.name in ("self", "cls"):
                continue
            if not tried.get(name, {}).get(parameter.name, set()) & set(KINDS[kind]):
                missing[(name, parameter.name)] = kind
    return missing


def test_every_scalar_device_and_dtype_parameter_is_tried() -> None:
    """A new function or module with an int, float, device or dtype parameter must have an
    entry that gives it the kind that makes that kind's mistakes (or a reason here)."""
    assert {k: v for k, v in untried(ENTRIES).items() if k not in NOT_TRIED} == {}
    assert set(NOT_TRIED) <= set(untried(ENTRIES)), "a reason for a parameter now tried"


def test_the_meta_test_fails_for_a_module_without_a_construction_entry() -> None:
    dropped = [e for e in ENTRIES if e.name != "MultiHeadAttention#construction"]
    assert {k: v for k, v in untried(dropped).items() if k not in NOT_TRIED} == {
        ("MultiHeadAttention", "device"): "device", ("MultiHeadAttention", "dtype"): "dtype"}


def test_each_kind_makes_the_new_mistakes() -> None:
    from .harness import Call

    call = Call(lambda **kw: None, {})
    assert {"tensor-of-2", "int64-overflow"} <= {m.id for m in Count(3).mutations("n", call)}
    for kind in (Positive(1.0), Real(0.5), Prob(0.1)):
        assert "tensor-of-2" in {m.id for m in kind.mutations("x", call)}
    assert {"not-a-device", "index-0", "absent-device"} <= {
        m.id for m in Device().mutations("device", call)}
    assert {"int64", "bool"} <= {m.id for m in DType(torch.float32).mutations("dtype", call)}
    assert "meta-device" in {m.id for m in Lengths(torch.tensor([1, 2]), 3).mutations(
        "lengths", call)}


# --- decoding a fixed number of tokens (make bench) ---------------------------------------------


def _decoding_case() -> tuple[Any, torch.Tensor, torch.Tensor]:
    model = seeded(lambda: api("Transformer")(_tf_config())).eval()
    src = torch.tensor([[3, 4, 5], [6, 7, 0]])
    return model, src, torch.tensor([3, 2])


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_decode_without_stopping_at_eos_decodes_max_len_tokens(use_cache: bool) -> None:
    model, src, lengths = _decoding_case()
    greedy = api("decoding.greedy_decode")
    # an <eos> every sentence produces: a word found in every row of a decode that never stops
    rows = greedy(model, src, lengths, 7, stop_at_eos=False).tokens.tolist()
    eos = min(set(rows[0]).intersection(*rows[1:]))
    stopped = greedy(model, src, lengths, 7, eos_id=eos, use_cache=use_cache)
    full = greedy(model, src, lengths, 7, eos_id=eos, use_cache=use_cache, stop_at_eos=False)
    assert full.tokens.shape == (2, 7) and full.weights.shape == (2, 7, 3)
    assert full.tokens.tolist() == rows
    # the same words up to each sentence's <eos>; then <pad>, or the words that follow it
    pad = model.config.pad_id
    for row in range(2):
        end = rows[row].index(eos) + 1
        assert stopped.tokens[row, :end].tolist() == rows[row][:end]
        assert set(stopped.tokens[row, end:].tolist()) <= {pad}
    assert stopped.tokens.shape[1] == max(r.index(eos) for r in rows) + 1 < 7
    cached = greedy(model, src, lengths, 7, eos_id=eos, use_cache=not use_cache,
                    stop_at_eos=False)
    assert torch.equal(cached.tokens, full.tokens)


def test_beam_search_without_stopping_at_eos_decodes_max_len_tokens() -> None:
    model, src, lengths = _decoding_case()
    greedy = api("decoding.greedy_decode")(model, src, lengths, 6, stop_at_eos=False).tokens
    eos = int(greedy[0, 0])  # the first word: without stop_at_eos=False, K = 1 stops there
    for K in (1, 2):
        out = api("beam_search")(model, src, lengths, 6, eos_id=eos, beam_size=K,
                                 stop_at_eos=False)
        assert out.tokens.shape == (2, 6) and out.weights.shape == (2, 6, 3)
        if K == 1:  # one hypothesis: greedy decoding
            assert torch.equal(out.tokens, greedy)


def test_stop_at_eos_is_a_bool() -> None:
    model, src, lengths = _decoding_case()
    says(message(TypeError, lambda: api("decoding.greedy_decode")(
        model, src, lengths, 4, stop_at_eos="no")), "stop_at_eos must be a bool, got str 'no'")


def test_eos_id_is_still_checked() -> None:
    """eos_id=-1 (the benchmark's old way) stays refused: it is no id of the vocabulary."""
    model, src, lengths = _decoding_case()
    says(message(ValueError, lambda: api("decoding.greedy_decode")(model, src, lengths, 4,
                                                                   eos_id=-1)),
         "eos_id must be >= 0, got -1")
