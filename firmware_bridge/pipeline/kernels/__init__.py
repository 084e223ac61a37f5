"""Jitted kernels of the pipeline (numba): the column order of a stream's decoded rows
and its sequence accounting, called from :mod:`firmware_bridge.pipeline.rows`."""
