"""What a campaign's inputs cover, read from its output directory: labels, mutants, edges,
lcov, Stryker's mutation report, plots.  The engine never imports it.
"""
