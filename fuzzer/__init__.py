"""ffuzz, the FairFuzz engine: scheduling and bookkeeping in Python, the hot loop in ffcc.native.

Entry point: cli.py (`ffuzz`).  campaign.py runs the loop; scheduler.py picks entries,
stages.py builds the mutation stages, executor.py runs them through the C core.
"""
