"""Synthetic tasks: copying and reversing symbol sequences; key-value retrieval and an object
among image regions (chapter 2)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnlib._checks import check_floating, check_int, check_ndim, shape_str

__all__ = [
    "RegionTask",
    "RetrievalTask",
    "copy_task",
    "key_retrieval_task",
    "object_region_task",
    "reverse_task",
]


def _generator(seed: int) -> torch.Generator:
    """A private generator seeded with ``seed``, an int >= 0."""
    _check_int("seed", seed, low=0)
    return torch.Generator().manual_seed(seed)


def _check_number(name: str, value: object) -> None:
    """Raise TypeError unless ``value`` is an int or float (a bool is refused)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")


def _check_int(name: str, value: int, low: int) -> None:
    """Raise TypeError unless ``value`` is an int (not a bool), ValueError if it is < ``low``
    or outside int64 (:func:`~attnlib._checks.check_int`)."""
    check_int(name, value, minimum=low)


def copy_task(
    n: int, length: int = 10, num_symbols: int = 10, seed: int = 0
) -> tuple[Tensor, Tensor]:
    """The copy task: random symbol sequences whose target is the sequence itself.

    Symbols are 1..``num_symbols``; 0 is left free for padding. Drawn from a private
    ``torch.Generator`` seeded with ``seed``, so the global random state is untouched.

    Shape:
        Returns ``(src, tgt)``, both (n, length) long, ``tgt == src``.

    Raises:
        ValueError: if ``n``, ``length`` or ``num_symbols`` is < 1.
    """
    src = _random_symbols(n, length, num_symbols, seed)
    return src, src.clone()


def reverse_task(
    n: int, length: int = 10, num_symbols: int = 10, seed: int = 0
) -> tuple[Tensor, Tensor]:
    """The reversal task: like :func:`copy_task`, but the target is the sequence reversed.

    Shape:
        Returns ``(src, tgt)``, both (n, length) long, ``tgt[i] == src[i].flip(0)``.

    Raises:
        ValueError: if ``n``, ``length`` or ``num_symbols`` is < 1.
    """
    src = _random_symbols(n, length, num_symbols, seed)
    return src, src.flip(1)  # (n, length)


def _random_symbols(n: int, length: int, num_symbols: int, seed: int) -> Tensor:
    for name, value in (("n", n), ("length", length), ("num_symbols", num_symbols)):
        _check_int(name, value, low=1)
    generator = _generator(seed)
    return torch.randint(1, num_symbols + 1, (n, length), generator=generator)  # (n, length)


# ---------------------------------------------------------------------------------------------
# Key-value retrieval: a task for comparing scoring functions (chapter 2)
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class RetrievalTask:
    r"""Queries, keys and values of :func:`key_retrieval_task`; query i refers to key i.

    The ideal attention puts all of query i's weight on key i, so the ideal output is
    ``value`` itself and the ideal weight matrix of every example is the identity.

    Shape:
        query: (n, S, Eq), the S queries of each example.
        key: (n, S, Ek), each key of norm :math:`\sqrt{E_k}`.
        value: (n, S, Ev).
        mapping: (Eq, Ek), the hidden linear map from a key to its query.
    """

    query: Tensor
    key: Tensor
    value: Tensor
    mapping: Tensor

    def accuracy(self, weights: Tensor) -> float:
        """The fraction of queries whose largest attention weight is on their own key.

        Shape:
            weights: (n, S, S), queries × keys, as returned by attention on this task.

        Raises:
            ValueError: if ``weights`` does not have shape (n, S, S).
        """
        n, S = self.key.shape[:2]
        weights = check_floating("weights", weights)
        check_ndim("weights", weights, 3, "(n, S, S)")
        if weights.shape != (n, S, S):
            raise ValueError(
                f"weights must have shape (n, S, S) = {shape_str((n, S, S))}, "
                f"got {shape_str(weights.shape)}"
            )
        right = torch.arange(S, device=weights.device)  # (S,)
        return float((weights.argmax(dim=-1) == right).double().mean())


def _check_retrieval_args(n: int, num_keys: int, key_size: int, value_size: int,
                          mapping: Tensor | None, noise: float) -> None:
    for name, size in (("n", n), ("num_keys", num_keys), ("key_size", key_size),
                       ("value_size", value_size)):
        _check_int(name, size, low=1)
    if mapping is not None and (not isinstance(mapping, Tensor)
                                or not mapping.is_floating_point()):
        raise TypeError(f"mapping must be a floating-point tensor (Eq, Ek), got "
                        f"{mapping.dtype if isinstance(mapping, Tensor) else type(mapping).__name__}")
    if mapping is not None and (mapping.ndim != 2 or mapping.shape[1] != key_size):
        raise ValueError(f"mapping must have shape (Eq, Ek) with Ek = key_size = {key_size}, "
                         f"got {shape_str(mapping.shape)}")
    _check_number("noise", noise)
    if not noise >= 0.0 or noise == float("inf"):
        raise ValueError(f"noise must be finite and >= 0, got {noise}")


def key_retrieval_task(
    n: int,
    num_keys: int = 8,
    key_size: int = 8,
    value_size: int = 4,
    mapping: Tensor | None = None,
    noise: float = 0.5,
    seed: int = 0,
) -> RetrievalTask:
    r"""A key-value store and queries that each ask for one of its keys in another form.

    Each of the ``n`` examples holds ``num_keys`` = S keys :math:`\mathbf k_j`, drawn uniformly
    from the sphere of radius :math:`\sqrt{E_k}` (so every key has the same length), and as many
    values :math:`\mathbf v_j \sim \mathcal N(0, \mathbf I)`, unrelated to the keys. Query i is
    key i seen through a hidden linear map :math:`\mathbf M` (``mapping``), plus noise:

    .. math::

        \mathbf q_i = \mathbf M \mathbf k_i + \sigma \boldsymbol\varepsilon_i,

        \boldsymbol\varepsilon_i \sim \mathcal N(0, \mathbf I_{E_q}).

    Attention solves the task if every query puts its largest weight on its own key; its
    output is then close to the value stored under that key. With :math:`\mathbf M = \mathbf I`
    (the default) a query resembles its key, and a dot product finds it; with any other map a
    score must learn :math:`\mathbf M`. A scoring function sees vectors only, never positions,
    so putting the right key at the query's own index only makes the ideal weight matrix the
    identity. Drawn in float64 from a private ``torch.Generator`` seeded with ``seed``; the
    global random state is untouched.

    Args:
        n: the number of examples.
        num_keys: S, the keys (and queries) per example.
        key_size: Ek.
        value_size: Ev.
        mapping: M, a floating-point (Eq, Ek) tensor; ``None`` is the identity (Eq = Ek).
        noise: the standard deviation :math:`\sigma` of the query noise, >= 0.
        seed: the seed of the generator.

    Shape:
        mapping: (Eq, Ek). Returns a :class:`RetrievalTask` with query (n, S, Eq),
        key (n, S, Ek), value (n, S, Ev) and mapping (Eq, Ek), all float64.

    Raises:
        TypeError: if a size is not an int, or ``mapping`` is not a floating-point tensor.
        ValueError: if a size is < 1, ``mapping`` is not (Eq, Ek) with Ek = ``key_size``, or
            ``noise`` is negative or not finite.
    """
    _check_retrieval_args(n, num_keys, key_size, value_size, mapping, noise)
    if mapping is None:
        mapping = torch.eye(key_size, dtype=torch.float64)
    mapping = mapping.detach().to(torch.float64)
    g = _generator(seed)
    f64 = torch.float64
    key = torch.randn(n, num_keys, key_size, generator=g, dtype=f64)
    key = key / key.norm(dim=-1, keepdim=True) * key_size**0.5  # (n, S, Ek)
    value = torch.randn(n, num_keys, value_size, generator=g, dtype=f64)
    eps = torch.randn(n, num_keys, mapping.shape[0], generator=g, dtype=f64)
    query = key @ mapping.T + noise * eps  # (n, S, Eq)
    return RetrievalTask(query=query, key=key, value=value,
                         mapping=mapping.clone())


# ---------------------------------------------------------------------------------------------
# An object in one region of an image: a task for attention pooling (chapter 2)
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class RegionTask:
    """Images as sets of region feature vectors, from :func:`object_region_task`.

    Shape:
        inputs: (n, S, E), the feature vectors of the S = grid * grid regions, row by row.
        label: (n,) long, the class of the image's object, 0 or 1.
        position: (n,) long, the index in [0, S) of the region that holds the object.
    """

    inputs: Tensor
    label: Tensor
    position: Tensor
    grid: int


def object_region_task(
    n: int,
    grid: int = 4,
    feature_size: int = 8,
    objectness: float = 4.0,
    separation: float = 2.0,
    seed: int = 0,
) -> RegionTask:
    r"""Images cut into regions, one of which holds an object of class 0 or 1.

    Each of the ``n`` images is a grid × grid set of regions, each region a feature vector
    :math:`\mathbf x_n \in \mathbb R^E` (in a real model, a convolutional network's features of
    that part of the image). Every region is background noise, :math:`\mathcal N(0, \mathbf I)`,
    except one, at a random position, which holds the object: its first feature is raised by
    ``objectness`` (something is there) and its second by ``separation`` for class 1 or
    lowered by it for class 0 (what it is). The label depends on that one region only, so a
    classifier of the averaged regions sees its signal diluted S times, while attention
    pooling can learn to look where the object is. Drawn in float64 from a private
    ``torch.Generator`` seeded with ``seed``; the global random state is untouched.

    Args:
        n: the number of images.
        grid: regions per side; S = grid * grid regions per image.
        feature_size: E, the size of a region's feature vector, >= 2.
        objectness: how much the object raises the first feature, finite.
        separation: how much the class moves the second feature, finite.
        seed: the seed of the generator.

    Shape:
        Returns a :class:`RegionTask` with inputs (n, S, E) float64, label (n,) and
        position (n,), both long.

    Raises:
        TypeError: if ``n``, ``grid`` or ``feature_size`` is not an int.
        ValueError: if ``n`` or ``grid`` is < 1, ``feature_size`` < 2, or ``objectness`` or
            ``separation`` is not finite.
    """
    for name, size, low in (("n", n, 1), ("grid", grid, 1), ("feature_size", feature_size, 2)):
        _check_int(name, size, low=low)
    for name, shift in (("objectness", objectness), ("separation", separation)):
        _check_number(name, shift)
        if not abs(shift) < float("inf"):
            raise ValueError(f"{name} must be a finite number, got {shift}")
    generator = _generator(seed)
    S = grid * grid
    inputs = torch.randn(n, S, feature_size, generator=generator, dtype=torch.float64)
    label = torch.randint(0, 2, (n,), generator=generator)  # (n,)
    position = torch.randint(0, S, (n,), generator=generator)  # (n,)
    image = torch.arange(n)  # (n,)
    inputs[image, position, 0] += objectness
    inputs[image, position, 1] += separation * (2 * label - 1).double()
    return RegionTask(inputs=inputs, label=label, position=position, grid=grid)
