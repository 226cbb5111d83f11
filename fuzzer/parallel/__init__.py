"""Many instances: -M/-S sync directories, -j launches, CPU affinity, Ray clusters.  The engine
never imports it.
"""
