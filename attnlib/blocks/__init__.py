"""The attention building blocks, each tested against its twin (PyTorch, or its other form).

Above ``attnlib.data``, below ``attnlib.models``. In the order of the chapters:

* :mod:`attnlib.blocks.masking`: masks and the masked softmax;
* :mod:`attnlib.blocks.scoring`: additive, dot, scaled-dot and bilinear scores, attention
  pooling;
* :mod:`attnlib.blocks.attention`: scaled dot-product attention with PyTorch's semantics;
* :mod:`attnlib.blocks.multihead`: multi-head attention, equal to ``nn.MultiheadAttention``;
* :mod:`attnlib.blocks.positional`: sinusoidal, learned, relative and rotary positions;
  :mod:`attnlib.blocks.rope_scaling` (position interpolation, NTK-aware, YaRN) and
  :mod:`attnlib.blocks.alibi`: positions past the training length;
* :mod:`attnlib.blocks.efficient`: the online softmax, tiled attention, and measuring them;
  :mod:`attnlib.blocks.triton_flash`: the same loop as a Triton kernel (run on a CPU by Triton's
  interpreter, compiled on a GPU);
* :mod:`attnlib.blocks.gqa`, :mod:`attnlib.blocks.sliding_window`,
  :mod:`attnlib.blocks.linear_attention`: the attention of today's language models;
* :mod:`attnlib.blocks.latent_attention`, :mod:`attnlib.blocks.gated_attention`,
  :mod:`attnlib.blocks.delta_rule`: latent keys and values, gates and sinks, the delta rule
  (chapter 10);
* :mod:`attnlib.blocks.block_mask`, :mod:`attnlib.blocks.sparse_attention`,
  :mod:`attnlib.blocks.stable_attention`: block masks and score functions over tiled attention,
  trainable sparse attention (DeepSeek's indexer, MoBA), and attention that stays stable
  (QK-norm, soft-capping, QK-clip, differential attention), for the chapter that follows.
"""
