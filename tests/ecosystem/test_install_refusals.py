"""tools/install-gateway.sh refuses, before changing anything, on a system the
gateway does not support, and says why (exit status 3). Its installing runs are in
test_systemd.py (a booted root)."""

from __future__ import annotations

import glob
import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest
from brokers import installed
from harness import CACHE, REPO, need

SCRIPT = REPO / "tools" / "install-gateway.sh"


def run(argv: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd="/",
                          stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})


def test_32_bit_arm_is_refused_with_the_reason(tmp_path):
    # uname -m as a Raspberry Pi with 32-bit Raspberry Pi OS answers it; nothing else
    # of the system is asked before the refusal.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "uname").write_text('#!/bin/sh\n[ "$1" = -m ] && echo armv7l || /bin/uname "$@"\n')
    (fake / "uname").chmod(0o755)
    result = run(["sh", str(SCRIPT)], env={"PATH": f"{fake}:{os.environ['PATH']}"})
    assert result.returncode == 3, result
    assert "refused: this is 32-bit ARM (armv7l)" in result.stderr
    assert "64-bit Raspberry Pi OS" in result.stderr


def test_a_machine_other_than_x86_64_and_aarch64_is_refused():
    setarch = installed("setarch", "util-linux", "this test")
    result = run([setarch, "i686", "sh", str(SCRIPT)])  # a real 32-bit personality
    assert result.returncode == 3, result
    assert "machine 'i686' is not supported" in result.stderr


def test_a_python_older_than_3_11_is_refused():
    old = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[0]*/bin/python3"))
                 + glob.glob("/usr/bin/python3.[89]") + glob.glob("/usr/bin/python3.10"))
    if not old:
        pytest.fail("this test needs a Python older than 3.11 (e.g. `pyenv install 3.10`)",
                    pytrace=False)
    result = run(["sh", str(SCRIPT), "--python", old[0]])
    assert result.returncode == 3, result
    assert "is too old: the gateway needs Python >= 3.11" in result.stderr


def test_a_user_other_than_root_is_refused():
    setpriv = installed("setpriv", "util-linux", "this test")
    # As an operator's clone is, readable by the user running it (a CI clone sits in a
    # root-only temporary folder), with a Python that user can run (not root's pyenv).
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        pytest.fail("this test needs Debian's python3 (sudo apt-get install python3)", pytrace=False)
    folder = pathlib.Path(tempfile.mkdtemp(prefix="edgelearn-install-"))
    try:
        (folder / "tools").mkdir()
        script = folder / "tools" / SCRIPT.name
        shutil.copy(SCRIPT, script)
        for path in (folder, folder / "tools", script):
            path.chmod(0o755)
        result = run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                      "sh", str(script), "--python", python])
    finally:
        shutil.rmtree(folder)
    assert result.returncode == 3, result
    assert "needs root" in result.stderr


def test_a_system_without_systemd_is_refused(tmp_path):
    """The nspawn root without --boot: Debian, root, Python 3.11, but no systemd."""
    root = need(CACHE / "nspawn-root" / ".edgelearn-root-complete", "the nspawn root",
                "nspawn_root.sh").parent
    nspawn = installed("systemd-nspawn", "systemd-container", "this test")
    result = run([nspawn, "--quiet", "--register=no", "--keep-unit", "--volatile=overlay",
                  "--console=pipe", "-D", str(root), f"--bind-ro={REPO}:/opt/edgelearn/src",
                  "sh", "/opt/edgelearn/src/tools/install-gateway.sh"])
    assert result.returncode == 3, result
    assert "systemd is not running here" in result.stderr, result.stderr
    assert not (pathlib.Path(root) / "opt" / "edgelearn" / "venv").exists()
