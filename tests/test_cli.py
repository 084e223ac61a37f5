"""The `edgelearn` command: replay of the bundled demo, of logs and CSVs,
clear errors for bad input."""

import json

import numpy as np
import pytest

import edgelearn
from firmware_bridge import cli
from firmware_bridge.wire import encode_data
from firmware_bridge.wire.logfile import write_log


def run(capsys, *argv):
    status = cli.main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


def test_demo_replay_learns_with_a_tenth_of_the_labels(capsys):
    status, out, _ = run(capsys, "replay", "--json", "--quiet")
    assert status == 0
    summary = json.loads(out)
    stream = summary["streams"]["office-1"]
    assert stream["messages"] == 20_560 == summary["messages"]
    assert abs(stream["query_rate"] - 0.1) < 0.01
    assert stream["labels_used"] == pytest.approx(0.1 * 20_560, rel=0.05)
    # Occupancy is 23% positive: always guessing "empty" scores 0.77.
    assert stream["accuracy"] > 0.9 and stream["f1"] > 0.8
    assert summary["rejected"] == 0


def test_budget_and_learner_options(capsys):
    _, out, _ = run(capsys, "replay", "--json", "--quiet", "--learner", "paacds", "--label-budget", "0.3",
                      "--set", "variant='PAACDS-I'")
    summary = json.loads(out)
    assert abs(summary["streams"]["office-1"]["query_rate"] - 0.3) < 0.01
    assert "PAACDS-I" in summary["learner"]
    _, out, _ = run(capsys, "replay", "--json", "--quiet", "--learner", "pa", "--policy", "all")
    assert json.loads(out)["streams"]["office-1"]["labels_used"] == 20_560


def test_bad_options_name_the_problem(capsys):
    status, _, err = run(capsys, "replay", "--learner", "paacds", "--set", "C=-1")
    assert status == 2 and "The 'C' parameter of PAACDS must be a float in (0, inf]. Got -1." in err
    status, _, err = run(capsys, "replay", "--learner", "pa", "--label-budget", "0.1")
    assert status == 2 and "--label-budget needs an active learner" in err
    status, _, err = run(capsys, "replay", "no-such-log.msgpack")
    assert status == 2 and "no-such-log.msgpack" in err
    with pytest.raises(SystemExit):
        cli.main(["replay", "--set", "not an assignment"])
    for timeout in ("inf", "nan", "0", "soon"):
        with pytest.raises(SystemExit) as exit:
            cli.main(["status", "--timeout", timeout])
        assert exit.value.code == 2
        assert f"--timeout: must be a number of seconds in (0, 3600]. Got '{timeout}'." in capsys.readouterr().err


def test_corrupt_log_is_reported_with_its_offset(tmp_path, capsys):
    path = tmp_path / "log.msgpack"
    records = [("sensors/s/data", float(i), encode_data(float(i), i, {"t": float(i % 7)}, y=i % 2)) for i in range(50)]
    write_log(path, records)
    size = path.stat().st_size
    path.write_bytes(path.read_bytes()[: size - 5])  # the last record is cut short
    status, out, err = run(capsys, "replay", str(path), "--json", "--quiet")
    assert status == 1
    summary = json.loads(out)
    assert summary["streams"]["s"]["messages"] == 49
    assert len(summary["corrupt_records"]) == 1 and "byte offset" in summary["corrupt_records"][0]
    assert "byte offset" in err


def test_bad_messages_in_a_log_are_counted_not_fatal(tmp_path, capsys):
    path = tmp_path / "log.msgpack"
    good = [("sensors/s/data", float(i), encode_data(float(i), i, {"t": float(i)}, y=1)) for i in range(10)]
    bad = [("sensors/s/data", 10.0, b"\xc1garbage"), ("sensors/s/data", 11.0, encode_data(11.0, 11, {"t": 1.0}) + b"x"),
           ("sensors/s/data", 12.0, encode_data(12.0, 12, {f"c{i}": 1.0 for i in range(1000)}))]
    write_log(path, good + bad)
    status, out, _ = run(capsys, "replay", str(path), "--json", "--quiet")
    summary = json.loads(out)
    assert status == 0 and summary["rejected"] == 3 and summary["streams"]["s"]["messages"] == 10


def test_csv_replay_is_the_jitted_replay(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    path = tmp_path / "sensors.csv"
    lines = ["time,a,b,c,occupied"] + [
        f"t{i},{X[i, 0]},{'' if i % 5 == 0 else X[i, 1]},{X[i, 2]},{y[i]}" for i in range(400)
    ]
    path.write_text("\n".join(lines) + "\n")
    status, out, _ = run(capsys, "replay", str(path), "--json", "--learner", "paacds", "--label-budget", "0.2")
    assert status == 0
    stream = json.loads(out)["streams"]["sensors"]
    X[::5, 1] = np.nan
    expected = edgelearn.replay(edgelearn.PAACDS(target_query_rate=0.2), X, y, feature_names=["a", "b", "c"])
    assert stream["accuracy"] == expected.accuracy and stream["f1"] == expected.f1
    assert stream["query_rate"] == expected.query_rate


def test_bench_runs_small(capsys):
    status, out, _ = run(capsys, "bench", "--n", "3000", "--river-n", "300", "--json")
    result = json.loads(out)
    assert status == 0 and result["n"] == 3000 and result["paacds"]["instances_per_s"] > 0
    assert result["river"]["n"] == 300 and result["ratio"] > 0


def test_replay_of_a_multilabel_log(tmp_path, capsys):
    path = tmp_path / "log.msgpack"
    rng = np.random.default_rng(0)
    records = []
    for i in range(120):
        a, b = rng.normal(size=2)
        records.append(("sensors/m/data", float(i), encode_data(float(i), i, {"a": a, "b": b},
                                                                y={"hot": bool(a > 0), "wet": bool(b > 0)})))
    write_log(path, records)
    status, out, _ = run(capsys, "replay", str(path), "--json", "--quiet", "--learner", "kelm_multilabel",
                         "--set", "window=32", "--set", "block_size=8", "--set", "J0=1000.0")
    stream = json.loads(out)["streams"]["m"]
    assert status == 0 and stream["messages"] == 120 and stream["labels_used"] == 120
    assert "accuracy" not in stream and stream["hamming_loss"] < 0.3 and stream["micro_f1"] > 0.6
    status, out, _ = run(capsys, "replay", str(path), "--quiet", "--learner", "kelm_multilabel")
    assert status == 0 and "Hamming loss" in out and "micro-F1" in out


@pytest.mark.parametrize("learner", ["paacds", "pa", "synthesis_nb"])
def test_csv_replay_with_word_labels(tmp_path, capsys, learner):
    """A label column of "occupied"/"empty" replays (jitted or prequential) and
    scores as the 1/0 column it stands for (up to the few instances before the
    first label, where the learner predicts False: equal to 0 in Python, equal to
    neither word)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 2))
    y = X[:, 0] - X[:, 1] > 0
    scores = {}
    for name, words in (("words", ("empty", "occupied")), ("bits", ("0", "1"))):
        path = tmp_path / f"{name}.csv"
        path.write_text("a,b,room\n" + "".join(f"{X[i, 0]},{X[i, 1]},{words[int(y[i])]}\n" for i in range(400)))
        status, out, _ = run(capsys, "replay", str(path), "--json", "--quiet", "--learner", learner)
        assert status == 0
        scores[name] = json.loads(out)["streams"][name]
    for key in ("accuracy", "f1", "query_rate"):
        assert abs(scores["words"][key] - scores["bits"][key]) <= 0.02, key
    assert scores["words"]["accuracy"] > 0.85 and scores["words"]["labels_used"] > 0


def test_log_replay_with_word_labels(tmp_path, capsys):
    path = tmp_path / "log.msgpack"
    rng = np.random.default_rng(2)
    records = []
    for i in range(300):
        a = float(rng.normal())
        records.append(("sensors/room/data", float(i),
                        encode_data(float(i), i, {"a": a, "b": float(rng.normal())},
                                    y="occupied" if a > 0 else "empty")))
    write_log(path, records)
    status, out, _ = run(capsys, "replay", str(path), "--json", "--quiet", "--learner", "pa")
    stream = json.loads(out)["streams"]["room"]
    assert status == 0 and stream["messages"] == 300 and stream["labels_used"] == 300
    assert stream["accuracy"] > 0.9 and stream.get("unusable_labels", 0) == 0
