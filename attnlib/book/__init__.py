"""What the chapters need to display (the layer above ``attnlib._checks``).

* :mod:`attnlib.book.plot`: the book's figure style and heatmaps (the only module that imports
  matplotlib), with the Chinese font in ``fonts/``;
* :mod:`attnlib.book.show`: :func:`~attnlib.book.show.show_source`, the listings of attnlib's
  own code, and tables;
* :mod:`attnlib.book.progress`: progress bars a reader sees and stored outputs never hold;
* :mod:`attnlib.book.repro`: seeds, threads and the CPU kernels, fixed in each chapter's first
  cell.
"""
