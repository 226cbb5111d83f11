"""What a campaign leaves and shows: the output directory (AFL's layout), the resumable state,
fuzzer_stats and plot_data, the status screen.  It imports no other sub-room of fuzzer/: the
engine builds the Snapshot it writes, and what it reads of the engine's objects (a queue
entry, a label site, input-to-state counts) it names by Protocols of its own.
"""
