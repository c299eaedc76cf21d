"""Training, decoding and evaluating the models (above ``attnlib.models``).

* :mod:`attnlib.train.seq2seq_loop` and :mod:`attnlib.train.transformer_loop`: the training
  loops of chapters 4 and 7;
* :mod:`attnlib.train.recipe`: the Transformer paper's label smoothing and warm-up schedule;
* :mod:`attnlib.train.translation` and :mod:`attnlib.train.metrics`: translating test
  sentences, BLEU and exact match;
* :mod:`attnlib.train.decoding`: greedy and beam search for the Transformer;
* :mod:`attnlib.train.comparison` and :mod:`attnlib.train.runs`: like-for-like comparisons,
  and runs trained side by side in worker processes;
* :mod:`attnlib.train.speculative`: speculative decoding, greedy and sampled.
"""
