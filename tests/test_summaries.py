"""tools/summaries.py: the results pages' headline rows, checked on the way out and in."""

import json
import math

import pytest

from results_pages import load_tool

summaries = load_tool("summaries")


def good_row(**changes):
    row = {"protocol": "label budget 20%, PAACDS protocol", "learner": "ActiveAROW",
           "library": "edgelearn", "metrics": {"f1": 0.766, "accuracy": 0.808},
           "label_rate": 0.208, "cpu_us_per_instance": 3.1}
    row.update(changes)
    return row


def test_round_trip(tmp_path):
    rows = [good_row(),
            good_row(learner="River LR (all labels)", library="river", label_rate=1,
                     cpu_us_per_instance=None, metrics={"f1": 1, "hamming_loss": 0.25}),
            {"protocol": "p", "learner": "paper PAACDS", "library": "paper", "metrics": {"f1": 0.6}}]
    path = summaries.write_summary("results-x", "python tools/results_x.py --quick", rows, root=tmp_path)
    assert path == tmp_path / "docs" / "data" / "results-x.json"
    [document] = summaries.read_summaries(tmp_path)
    assert document["page"] == "docs/results-x.md"
    assert document["command"] == "python tools/results_x.py --quick"
    assert document["rows"][0] == good_row()
    # Integers come back as floats; absent optional fields as None.
    assert document["rows"][1]["metrics"] == {"f1": 1.0, "hamming_loss": 0.25}
    assert document["rows"][1]["label_rate"] == 1.0 and document["rows"][1]["cpu_us_per_instance"] is None
    assert document["rows"][2]["label_rate"] is None and document["rows"][2]["cpu_us_per_instance"] is None


def test_read_summaries_of_no_folder_is_empty(tmp_path):
    assert summaries.read_summaries(tmp_path) == []


@pytest.mark.parametrize("row, message", [
    ({k: v for k, v in good_row().items() if k != "learner"}, "needs 'learner'"),
    ({k: v for k, v in good_row().items() if k != "metrics"}, "needs 'metrics'"),
    (good_row(library="sklearn"), "'library' must be one of .*Got 'sklearn'"),
    (good_row(metrics={}), "'metrics' must name at least one metric"),
    (good_row(metrics={"f1": math.nan}), "metric 'f1' must be a finite number. Got nan"),
    (good_row(metrics={"accuracy": "0.8"}), "metric 'accuracy' must be a finite number. Got '0.8'"),
    (good_row(label_rate=1.5), "'label_rate' must be in \\[0, 1\\] or None. Got 1.5"),
    (good_row(label_rate=-0.1), "'label_rate' must be in \\[0, 1\\] or None. Got -0.1"),
])
def test_bad_rows_are_rejected_naming_the_field(tmp_path, row, message):
    with pytest.raises(ValueError, match=message):
        summaries.write_summary("results-x", "cmd", [good_row(), row], root=tmp_path)
    # Nothing is written when a row is bad.
    assert not (tmp_path / "docs" / "data" / "results-x.json").exists()


def test_a_hand_edited_bad_file_is_rejected_naming_file_and_row(tmp_path):
    path = summaries.write_summary("results-x", "cmd", [good_row(), good_row()], root=tmp_path)
    document = json.loads(path.read_text())
    document["rows"][1]["library"] = "weka"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="results-x.json row 1: 'library' must be one of"):
        summaries.read_summaries(tmp_path)
