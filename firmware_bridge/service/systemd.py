"""systemd's ``sd_notify`` over the standard library (no libsystemd binding)."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

__all__ = ["SystemdNotifier"]

logger = logging.getLogger("firmware_bridge.systemd")


class SystemdNotifier:
    """``sd_notify`` over the standard library: datagrams to ``$NOTIFY_SOCKET``.

    Does nothing when the variable is unset (not started by systemd with
    ``Type=notify``). ``watchdog_interval_s`` is ``$WATCHDOG_USEC`` in seconds when the
    watchdog is on for this process, else ``None``; pet it at least twice as often.

    >>> notifier = SystemdNotifier({})
    >>> notifier.notify("READY=1"), notifier.watchdog_interval_s
    (False, None)
    """

    def __init__(self, environ: Mapping[str, str] | None = None):
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        if address.startswith("@"):
            address = "\0" + address[1:]  # abstract namespace socket
        self.address = address or None
        self.watchdog_interval_s: float | None = None
        usec, pid = env.get("WATCHDOG_USEC", ""), env.get("WATCHDOG_PID", "")
        if usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid())):
            self.watchdog_interval_s = int(usec) / 1e6
        self._socket: socket.socket | None = None
        self._failed = False

    def notify(self, state: str) -> bool:
        """Send ``state`` (e.g. ``"READY=1"``); return whether it was sent."""
        if self.address is None:
            return False
        try:
            if self._socket is None:
                self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                # The worker sends these: a reader that is not reading must not stop
                # it (a full socket drops the datagram instead).
                self._socket.setblocking(False)
            self._socket.sendto(state.encode("utf-8"), self.address)
        except OSError as exc:
            if not self._failed:  # once: a broken socket would log every tick
                logger.warning("sd_notify to %r failed: %s", self.address, exc)
                self._failed = True
            return False
        return True

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
