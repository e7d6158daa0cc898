"""The Python client's own tests (CTest: clients.python): every event it writes is one that
`sweep worker`'s own check accepts (run through the real binary when SWEEP is set), the config
and seeds come from the SWEEP_* environment, and outside sweep it prints nothing."""

import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_events  # noqa: E402


class ClientTest(unittest.TestCase):
    def run_under_sweep(self, config):
        folder = tempfile.mkdtemp()
        path = os.path.join(folder, "config.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(config, f)
        env = {"SWEEP_RUN_DIR": folder, "SWEEP_CONFIG": path, "SWEEP_INIT_SEED": "3", "SWEEP_DATA_SEED": "4",
               "SWEEP_CHECKPOINT_DIR": os.path.join(folder, "checkpoint"), "SWEEP_RESUME": "1",
               "SWEEP_STALL_TIMEOUT": "8"}
        with mock.patch.dict(os.environ, env):
            out = io.StringIO()
            return sweep_events.Run(stream=out), out

    def test_config_seeds_and_environment(self):
        run, _ = self.run_under_sweep({"model": {"dropout": 0.1}, "seeds": {"init": 3, "data": 4}})
        self.assertEqual(run.get("model.dropout"), 0.1)
        self.assertIsNone(run.get("model.width"))
        self.assertEqual((run.init_seed, run.data_seed), (3, 4))
        self.assertTrue(run.resume)
        self.assertNotIn("seeds", run.config)
        self.assertEqual(run.heartbeat_every, 2.0)

    def test_events_are_json_lines_of_the_contract(self):
        run, out = self.run_under_sweep({})
        run.start(0, 0, total_steps=10, tokens_per_step=64, params=1000)
        run.train(1, 64, 3.5, lr=1e-3, grad_norm=float("inf"))
        run.eval(1, 64, "val", float("nan"))
        run.checkpoint(1, 64)
        run.heartbeat(1, force=True)
        run.end(1, 64, test_loss=3.4)
        lines = [json.loads(line) for line in out.getvalue().splitlines()]
        self.assertEqual([e["event"] for e in lines], ["start", "train", "eval", "checkpoint", "heartbeat", "end"])
        self.assertEqual(lines[0]["schema"], 1)
        self.assertEqual(lines[1]["grad_norm"], "inf")
        self.assertEqual(lines[2]["loss"], "nan")
        self.assertEqual(lines[5]["test_loss"], 3.4)
        self.assertNotIn("test_bpb", lines[5])  # absent, never null
        sweep = os.environ.get("SWEEP")
        if sweep:  # the binary's own check accepts every line (`sweep worker`'s, through a tiny sweep)
            self.check_with_sweep(sweep, out.getvalue())

    def check_with_sweep(self, sweep, text):
        folder = tempfile.mkdtemp()
        with open(os.path.join(folder, "events.txt"), "w", encoding="utf-8") as f:
            f.write(text)
        with open(os.path.join(folder, "s.yaml"), "w", encoding="utf-8") as f:
            f.write("sweep: client\nbaseline: base\ntrainer: {command: [cat, events.txt], files: [events.txt], "
                    "keys: {x: 1}}\nbase: {}\ninterventions: {base: {}}\n")
        done = subprocess.run([sweep, "run", "s.yaml", "--results", "res"], cwd=folder, capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        run = os.listdir(os.path.join(folder, "res", "runs"))[0]
        with open(os.path.join(folder, "res", "runs", run, "worker.log"), encoding="utf-8") as f:
            self.assertNotIn("not an event", f.read())

    def test_refuses_what_sweep_would_refuse(self):
        run, _ = self.run_under_sweep({})
        with self.assertRaises(ValueError):
            run.train(0, 0, 1.0)  # a train event counts the step just taken
        with self.assertRaises(ValueError):
            run.end(5, test_loss=None)  # a done run reports its test loss
        with self.assertRaises(ValueError):
            run.end(5, test_loss=float("nan"))
        with self.assertRaises(ValueError):
            run.eval(1, 0, "train", 1.0)
        with self.assertRaises(ValueError):
            run.start(-1)
        with self.assertRaises(ValueError):
            run.start(0, params=1.5)
        with self.assertRaises(ValueError):
            run.end(3, tokens=-1, test_loss=1.0)

    def test_steps_stay_within_total_steps_but_the_end(self):
        # sweep ignores every event but the end past the start's total_steps (docs/reference.md)
        run, out = self.run_under_sweep({})
        run.start(0, total_steps=4, tokens_per_step=64)
        run.train(4, 256, 1.0)
        for late in (lambda: run.train(5, 320, 1.0), lambda: run.eval(5, 320, "val", 1.0),
                     lambda: run.checkpoint(5), lambda: run.heartbeat(5, force=True)):
            with self.assertRaises(ValueError):
                late()
        run.end(5, test_loss=1.0)  # a loop that counts one past its last step (nanoGPT's) ends there
        self.assertEqual([json.loads(l)["event"] for l in out.getvalue().splitlines()], ["start", "train", "end"])

    def test_preempted_exits_75_and_says_so(self):
        run, out = self.run_under_sweep({})
        with self.assertRaises(SystemExit) as stop:
            run.preempted(7, 448)
        self.assertEqual(stop.exception.code, sweep_events.EXIT_PREEMPTED)
        self.assertEqual(json.loads(out.getvalue())["status"], "preempted")

    def stopped_program(self, polls, signum):
        """A program under sweep that trains until a stop: how it ends when it reads stop_requested or not."""
        folder = tempfile.mkdtemp()
        code = f"""
import os, signal, sys, time
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
from sweep_events import Run
run = Run()
run.start(0, total_steps=10 ** 6)
for step in range(1, 10 ** 6):
    run.train(step, step, 1.0)
    if step == 3:
        os.kill(os.getpid(), {int(signum)})
    if {polls} and run.stop_requested:
        run.preempted(step)
    time.sleep(0.01)
"""
        env = dict(os.environ, SWEEP_RUN_DIR=folder, SWEEP_CHECKPOINT_DIR=folder)
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)

    def test_a_stop_always_stops(self):
        # read: the program checkpoints and exits 75
        self.assertEqual(self.stopped_program(True, signal.SIGTERM).returncode, sweep_events.EXIT_PREEMPTED)
        self.assertEqual(self.stopped_program(True, signal.SIGINT).returncode, sweep_events.EXIT_PREEMPTED)
        # never read: Python's own answer — killed by SIGTERM, KeyboardInterrupt for SIGINT
        self.assertEqual(self.stopped_program(False, signal.SIGTERM).returncode, -signal.SIGTERM)
        interrupted = self.stopped_program(False, signal.SIGINT)
        self.assertNotEqual(interrupted.returncode, 0)
        self.assertIn("KeyboardInterrupt", interrupted.stderr)

    def test_silent_outside_sweep(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            out = io.StringIO()
            run = sweep_events.Run(config={"train": {"lr": 0.1}}, stream=out)
            run.start(0)
            run.train(1, 8, 2.0)
            self.assertEqual(out.getvalue(), "")
            self.assertEqual(run.get("train.lr"), 0.1)
            self.assertFalse(run.resume)


if __name__ == "__main__":
    unittest.main()
