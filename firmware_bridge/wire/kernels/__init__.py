"""Jitted kernels of the wire protocol (numba): private, called through thin
validating wrappers in :mod:`firmware_bridge.fast_decode`."""
