"""ffuzz, the FairFuzz engine: scheduling and bookkeeping in Python, the hot loop in ffcc.native.

Entry point: cli.py (`ffuzz`), which reads the options and the AFL_* environment into a
Config (engine/config.py) and hands the campaign what it runs with.  engine/campaign.py runs
the loop; engine/scheduler.py picks entries, engine/stages.py builds the mutation stages,
engine/executor.py runs them through the C core.  output/ writes what a campaign leaves,
parallel/ runs many instances, reports/ reads their output directories.
"""
