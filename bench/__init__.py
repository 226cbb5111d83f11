"""Benchmarks, and the real-world project recipes they share with the tests."""
