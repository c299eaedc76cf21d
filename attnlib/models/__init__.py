"""Models made of the building blocks (above ``attnlib.blocks``, below ``attnlib.train``).

* :mod:`attnlib.models.kernel_regression`: Nadaraya-Watson kernel regression, attention's
  ancestor;
* :mod:`attnlib.models.seq2seq`: the GRU encoder-decoder with additive attention;
* :mod:`attnlib.models.transformer`: the Transformer, one idea a module;
* :mod:`attnlib.models.kv_cache`: what a decoding step keeps for the next one;
* :mod:`attnlib.models.decoder_lm`: a small decoder-only language model;
* :mod:`attnlib.models.quantized_cache` and :mod:`attnlib.models.paged_cache`: its cache as
  servers keep it, in fewer bits and in blocks;
* :mod:`attnlib.models.mixer_lm`: the same decoder with any attention (or DeltaNet) per layer.
"""
