"""Benchmarks of genwidgets against the simulator: ``python benchmarks/run.py [--quick]``."""
