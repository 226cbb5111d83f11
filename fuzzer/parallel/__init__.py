"""Many instances: -M/-S sync directories, -j launches, CPU affinity, Ray clusters.  The engine
never imports it: cli.py hands a campaign its SyncDir as the engine's PeerSync.
"""
