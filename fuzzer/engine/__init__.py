"""The fuzzing loop: the campaign and the objects it is made of (findings, corpus loading,
peer imports, labelling with retirement and lean rebuilds, phases, checkpoints, progress),
FairFuzz scheduling, stages, the executor over the C core, calibration, input-to-state, and
the settings (config.py, with the AFL_* environment read once).  It writes through output/
and never imports reports/ or parallel/: the sync directory comes in as a PeerSync
(peers.py), which parallel/sync.py implements.
"""
