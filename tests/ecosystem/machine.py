"""A Debian bookworm root (tools/ecosystem/nspawn_root.sh) booted with
``systemd-nspawn --boot --register=no --keep-unit``: a real systemd 252 as PID 1 of
its own PID namespace, sharing this machine's network (so the gateway in it reaches
the test's mosquitto on loopback). ``--volatile=overlay``: the cached root is
mounted read-only under a tmpfs overlay, so each boot starts from the root as it was
built and what a test installs there is gone after it (``--ephemeral`` would copy
the 300 MB root first: 10 to 40 s here).

Commands run inside through ``nsenter`` into the container's namespaces (with
``--register=no`` there is no machinectl)."""

from __future__ import annotations

import os
import pathlib
import subprocess

import pytest
from brokers import installed, wait_until
from harness import CACHE, need, terminate


class BootedRoot:
    def __init__(self, directory: pathlib.Path, binds: list[tuple[pathlib.Path, str, bool]]):
        self.root = need(CACHE / "nspawn-root" / ".edgelearn-root-complete",
                         "the nspawn root", "nspawn_root.sh").parent
        self.nspawn = installed("systemd-nspawn", "systemd-container", "the systemd tests")
        self.nsenter = installed("nsenter", "util-linux", "the systemd tests")
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.binds = binds
        self.log = directory / "nspawn.log"
        self.process: subprocess.Popen | None = None
        self.leader: int | None = None

    def start(self, timeout: float = 120) -> str:
        if os.geteuid() != 0:
            pytest.fail("the systemd tests boot a container: run them as root", pytrace=False)
        argv = [self.nspawn, "--boot", "--register=no", "--keep-unit", "--volatile=overlay",
                "--console=passive", "--quiet", "-D", str(self.root)]
        for host, guest, read_only in self.binds:
            argv.append(f"--bind{'-ro' if read_only else ''}={host}:{guest}")
        self._log_file = open(self.log, "ab")
        self.process = subprocess.Popen(argv, stdout=self._log_file, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)

        def leader():
            if self.process.poll() is not None:
                raise AssertionError(f"systemd-nspawn exited:\n{self.log.read_text()}")
            children = pathlib.Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
            for pid in children.read_text().split():
                if pathlib.Path(f"/proc/{pid}/comm").read_text().strip() == "systemd":
                    return int(pid)
            return None
        self.leader = wait_until(leader, 30, "the container's systemd", interval=0.1)

        def booted():
            state = self.run("systemctl", "is-system-running", check=False,
                             timeout=10).stdout.strip()
            return state if state in ("running", "degraded") else None
        state = wait_until(booted, timeout, "the container to finish booting", interval=0.5)
        return state

    def env(self) -> list[str]:
        env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "HOME=/root", "LANG=C.UTF-8"]
        if (self.root / "etc" / "ssl" / "host-ca.crt").exists():
            env.append("PIP_CERT=/etc/ssl/host-ca.crt")  # pip trusts what pip here trusts
        for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                     "NO_PROXY", "PIP_INDEX_URL", "PIP_DEFAULT_TIMEOUT"):
            if os.environ.get(name):
                env.append(f"{name}={os.environ[name]}")
        return env

    def run(self, *command: str, check: bool = True, timeout: float = 120,
            input: str | None = None) -> subprocess.CompletedProcess:
        argv = [self.nsenter, "--target", str(self.leader), "--mount", "--uts", "--ipc",
                "--net", "--pid", "--cgroup", "--root", "--",
                "/usr/bin/env", "-i", *self.env(), *command]
        # nsenter keeps the working directory's path (its --wd=/ left none here): "/".
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                input=input, cwd="/")
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(command)} exited {result.returncode}:\n"
                                 f"{result.stdout}\n{result.stderr}")
        return result

    def show(self, unit: str, *properties: str) -> dict[str, str]:
        out = self.run("systemctl", "show", unit, "-p", ",".join(properties)).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def journal(self, unit: str) -> str:
        return self.run("journalctl", "-u", unit, "--no-pager", "-o", "short-monotonic",
                        check=False).stdout

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            terminate(self.process, 60)  # SIGTERM: nspawn shuts the container down in order
        if self.process is not None:
            self._log_file.close()
        self.process = None


def pip_cache() -> pathlib.Path:
    """A pip cache kept across boots of the root (whose own changes are not kept)."""
    path = CACHE / "nspawn-pip-cache"
    path.mkdir(parents=True, exist_ok=True)
    return path

