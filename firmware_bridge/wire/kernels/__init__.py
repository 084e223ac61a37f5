"""Jitted kernels of the wire protocol (numba): private, called through thin
validating wrappers in :mod:`firmware_bridge.wire.bulk_decode`."""
