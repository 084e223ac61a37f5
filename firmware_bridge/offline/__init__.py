"""Offline: recorded logs and CSV files through the pipeline (a room of its own).

Replay (message by message, or a stream's rows in its learner's jitted loop), fan-out of
many logs x parameter sets over processes or a Dask cluster, tuning, results tables,
learning curves and plots. It uses the pipeline and the wire; it never imports the
service (a replay needs no broker, no checkpoint directory and no configuration file).
"""
