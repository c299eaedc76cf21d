"""The tasks and measurements of single chapters: the top layer, which nothing else imports.

* :mod:`attnlib.experiments.complexity` and :mod:`attnlib.experiments.offset_copy`: chapter 5;
* :mod:`attnlib.experiments.extrapolation`: chapter 6 (and 9);
* :mod:`attnlib.experiments.memory_wall`, :mod:`attnlib.experiments.cache_memory`,
  :mod:`attnlib.experiments.long_context` and :mod:`attnlib.experiments.lm_tasks`: chapter 9;
* :mod:`attnlib.experiments.latent_cache`, :mod:`attnlib.experiments.sinks` and
  :mod:`attnlib.experiments.recall`: chapter 10;
* :mod:`attnlib.experiments.sparse_retrieval`, :mod:`attnlib.experiments.stability` and
  :mod:`attnlib.experiments.distractors`: chapter 11.
"""
