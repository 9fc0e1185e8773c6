"""Workloads for the demo and benchmarks: real feature routines on bundled data."""
