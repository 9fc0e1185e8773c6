"""The application: command line, demo, config builds, plots and workloads (nothing imports it)."""
