"""The fuzzing loop: the campaign, FairFuzz scheduling, stages, the executor over the C core,
calibration, input-to-state, label retirement, lean rebuilds and phases.  It writes through
output/ and never imports reports/ or parallel/.
"""
