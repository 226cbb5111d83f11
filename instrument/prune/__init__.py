"""Pruning infeasible and trivial labels (``ffcc --prune[=fast|gccdiff]``), and rebuilding a
project build with fewer labels (``ffcc --prune build/``, ``ffcc --retired=FILE build/``).

``pruner`` decides the labels of each unit a build annotates (``Pruner``, ``analyse``) on
analysis ``variants`` of its text, compiled by ``compile``, with the ``fast`` method or
``gccdiff``; ``report`` says what went; ``rebuild`` reruns a recorded project build.  This
file imports nothing: a project build without labels reads ``rebuild`` alone, and must not
load the label machinery that ``pruner`` needs.
"""
