"""The checkpoint store on a real file system, with real processes killed mid-write."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import numpy as np

from edgelearn.state import load_checkpoint, save_checkpoint
from firmware_bridge.service.checkpoints import CheckpointStore, checkpoint_path

# Writes a checkpoint of about 4 MB again and again until killed.
_WRITER = """
import sys, numpy as np
from edgelearn.state import save_checkpoint
path = sys.argv[1]
state = {"stream": "s1", "weights": np.random.default_rng(0).normal(size=500_000)}
print("ready", flush=True)
step = 0
while True:
    state["step"] = step
    save_checkpoint(path, state)
    step += 1
"""


def test_temp_files_of_writes_killed_in_a_loop_are_removed_at_start(tmp_path):
    directory = str(tmp_path / "state")
    os.makedirs(directory)
    path = checkpoint_path(directory, "s1")
    keep = os.path.join(directory, "notes.tmp")  # not ours: left alone
    open(keep, "w").close()
    rng = random.Random(15)
    stale_total = 0
    for _ in range(12):
        writer = subprocess.Popen([sys.executable, "-c", _WRITER, path],
                                  stdout=subprocess.PIPE, text=True)
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.4))
        writer.send_signal(signal.SIGKILL)
        writer.wait(10)
        stale = sum(name.endswith((".tmp", ".tmp.link")) for name in os.listdir(directory)
                    if name != "notes.tmp")
        store = CheckpointStore(directory)
        left = sorted(n for n in os.listdir(directory) if n != "notes.tmp")
        assert all(n.startswith("stream-s1.ckpt") for n in left), left
        assert store.report["stale_removed"] == stale
        stale_total += stale
        state, _ = load_checkpoint(path)  # a whole generation survived every kill
        assert state["weights"].shape == (500_000,)
    assert os.path.exists(keep)
    assert stale_total >= 3  # the kills did land inside writes


def test_stale_removal_counts_what_it_removed(tmp_path):
    directory = str(tmp_path)
    save_checkpoint(checkpoint_path(directory, "a"), {"x": np.zeros(3)})
    for name in (".stream-a.ckpt.k2j3.tmp", ".stream-a.ckpt.zz9.tmp.link", ".other.tmp"):
        open(os.path.join(directory, name), "w").close()
    store = CheckpointStore(directory)
    assert store.report["stale_removed"] == 2
    assert sorted(os.listdir(directory)) == [".other.tmp", "stream-a.ckpt"]
