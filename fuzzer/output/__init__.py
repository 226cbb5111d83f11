"""What a campaign leaves and shows: the output directory (AFL's layout), the resumable state,
fuzzer_stats and plot_data, the status screen.  It imports no other sub-room of fuzzer/.
"""
