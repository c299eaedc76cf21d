r"""The Transformer of "Attention Is All You Need": one idea a module.

An encoder-decoder built from nothing but attention and position-wise feed-forward layers
{Vaswani et al. 2017}. For a source sentence :math:`\mathbf x` and a target prefix
:math:`\mathbf y_{<t}`:

.. math::

    \mathbf H^{(0)} &= \sqrt{D}\, E_{\text{src}}[\mathbf x] + \mathrm{PE}, \\
    \mathbf H^{(n)} &= \mathrm{EncoderLayer}(\mathbf H^{(n-1)}), \\
    \mathbf G^{(0)} &= \sqrt{D}\, E_{\text{tgt}}[\mathbf y_{<t}] + \mathrm{PE}, \\
    \mathbf G^{(n)} &= \mathrm{DecoderLayer}(\mathbf G^{(n-1)}, \mathbf H^{(N)}), \\
    p(y_t \mid \mathbf y_{<t}, \mathbf x) &= \mathrm{softmax}(\mathbf G^{(N)}_t W_{\text{out}}^\top).

Each sub-layer (self-attention, cross-attention, feed-forward) sits in a residual connection
with layer normalisation, after the sum as in the paper (post-LN,
:math:`\mathrm{LN}(x + \mathrm{Sublayer}(x))`) or before the sub-layer (pre-LN,
:math:`x + \mathrm{Sublayer}(\mathrm{LN}(x))`, with one more LayerNorm after the last layer).
The layers compute exactly what ``nn.TransformerEncoderLayer`` and ``nn.TransformerDecoderLayer``
compute (``batch_first=True``), with :class:`attnlib.blocks.multihead.MultiHeadAttention` inside.

Three masks, all boolean with True = may attend, all made from lengths by
:func:`~attnlib.models.transformer.masks.make_masks`, the one place where the model turns lengths
into masks (through :func:`attnlib.blocks.masking.lengths_to_mask`):

- the source **padding mask**: no query attends to a padded source position (encoder
  self-attention and cross-attention);
- the **causal mask** ("sequence mask"): target position i sees positions 0..i only, so that
  teacher forcing on the whole target, shifted right, trains every position at once without
  letting a position see the word it must predict;
- the target padding mask, combined with the causal one in the decoder's self-attention.

At inference the decoder runs one token at a time:
:meth:`~attnlib.models.transformer.model.Transformer.init_cache` and
:meth:`~attnlib.models.transformer.model.Transformer.decode_step` feed one token through the
decoder with the key/value cache of :mod:`attnlib.models.kv_cache`; the searches that call them,
greedy and beam search, are in :mod:`attnlib.train.decoding`, a layer above.

The modules, in reading order (every name is importable from this package):

* ``config``: :class:`~attnlib.models.transformer.config.TransformerConfig`, the sizes and
  choices, and the check of a batch of ids against them;
* ``masks``: :func:`~attnlib.models.transformer.masks.make_masks`, every mask from lengths;
* ``layers``: the feed-forward network, :class:`~attnlib.models.transformer.layers.EncoderLayer`
  and :class:`~attnlib.models.transformer.layers.DecoderLayer`;
* ``stacks``: the encoder and decoder (N layers each) and the named outputs;
* ``model``: :class:`~attnlib.models.transformer.model.Transformer` itself.
"""

from attnlib.models.transformer.config import ACTIVATIONS, CHAPTER7_SIZES, TransformerConfig
from attnlib.models.transformer.layers import DecoderLayer, EncoderLayer, FeedForward
from attnlib.models.transformer.masks import Masks, make_masks
from attnlib.models.transformer.model import Transformer
from attnlib.models.transformer.stacks import (
    AttentionWeights,
    Decoder,
    DecoderOutput,
    Encoded,
    Encoder,
    StepOutput,
)

__all__ = [
    "ACTIVATIONS",
    "CHAPTER7_SIZES",
    "AttentionWeights",
    "Decoder",
    "DecoderLayer",
    "DecoderOutput",
    "Encoded",
    "Encoder",
    "EncoderLayer",
    "FeedForward",
    "Masks",
    "StepOutput",
    "Transformer",
    "TransformerConfig",
    "make_masks",
]
