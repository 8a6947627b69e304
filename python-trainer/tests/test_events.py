"""Events on stdout and in events.jsonl, and result.json."""

import io
import json
from contextlib import redirect_stdout

from rollout_trainer.events import PREFIX, Emitter


def test_events_go_to_stdout_with_the_prefix_and_to_events_jsonl(tmp_path):
    emitter = Emitter(tmp_path / "out")
    buf = io.StringIO()
    with redirect_stdout(buf):
        emitter.emit({"event": "start", "job": "j", "steps": 3})
        emitter.log("an ordinary line")
        m = emitter.metrics(1, loss=2.5, tokens=10, bad=float("nan"), word="x", flag=True, lr=None)
        emitter.checkpoint(1, "out/checkpoint-1")
        emitter.emit({"event": "done", "result": {"metrics": {"loss": float("inf")}}})
    lines = buf.getvalue().splitlines()
    assert lines[0] == PREFIX + '{"event":"start","job":"j","steps":3}' and lines[1] == "an ordinary line"
    assert m == {"event": "metrics", "step": 1, "loss": 2.5, "tokens": 10}, "numbers only, finite only"
    stored = [json.loads(line) for line in (tmp_path / "out" / "events.jsonl").read_text().splitlines()]
    assert [json.loads(line[len(PREFIX):]) for line in lines if line.startswith(PREFIX)] == stored
    assert stored[2] == {"event": "checkpoint", "step": 1, "path": "out/checkpoint-1"}
    assert stored[3]["result"]["metrics"]["loss"] is None, "a non-finite number becomes null rather than invalid JSON"
    assert emitter.last_metrics() == m


def test_result_json_is_replaced_whole(tmp_path):
    emitter = Emitter(tmp_path)
    emitter.write_result({"status": "failed", "error": "x"})
    emitter.write_result({"status": "succeeded", "error": None})
    assert json.loads((tmp_path / "result.json").read_text()) == {"status": "succeeded", "error": None}
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]
