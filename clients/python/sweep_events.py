"""sweep's events for a training program of your own: one file, the standard library only.

Copy this file beside your train.py. Under `sweep run`, a trainer named in the sweep file's
`trainer:` section reads its run's config and seeds from here and prints the events sweep reads
(docs/reference.md, "Events"); outside sweep it prints nothing and the config comes from
wherever you point it. The five lines:

    from sweep_events import Run
    run = Run()                                   # the run's config, seeds, checkpoint folder
    run.start(step=0, total_steps=n, tokens_per_step=b * t)
    for step in ...: ...; run.train(step, tokens, loss, lr=lr)   # every optimizer step
    run.end(step, tokens, test_loss=loss)         # the result: a finite test loss

Also: run.eval(step, tokens, "val", loss) for a validation point, run.checkpoint(step, tokens)
after writing one into run.checkpoint_dir, run.heartbeat(step) in a long phase without other
events, and run.stop_requested — true after SIGTERM/SIGINT: write a checkpoint, then
run.preempted(step, tokens) (it exits 75; the run resumes later with run.resume true). A program
that never reads run.stop_requested keeps Python's own answer to a stop (SIGINT raises
KeyboardInterrupt, SIGTERM ends it): it stops, and resumes from its last checkpoint — never trains
on to its end. So does one that stopped reading it for more than two train events.
run.diverged(step, tokens, why) for a non-finite loss (exits 3).
"""

import json
import math
import operator
import os
import signal
import sys
import time

SCHEMA = 1  # the events schema this client writes (docs/reference.md)
EXIT_DIVERGED = 3
EXIT_PREEMPTED = 75
STATES = ("done", "diverged", "failed", "preempted")


def _number(x):
    """A loss as the contract wants it: a number, or "nan", "inf", "-inf"."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _whole(name, x, optional=False):
    """A count the contract wants whole and >= 0 (numpy integers too); None when optional and absent."""
    if x is None and optional:
        return None
    try:
        if isinstance(x, bool):
            raise TypeError
        value = operator.index(x)
    except TypeError:
        raise ValueError(f"{name} must be a whole number >= 0, got {x!r}") from None
    if value < 0:
        raise ValueError(f"{name} must be a whole number >= 0, got {x!r}")
    return value


class Run:
    """One run: its config (a dict), seeds, checkpoint folder and whether to resume.

    Under sweep every value comes from the SWEEP_* environment; outside it, pass `config`
    (a dict or a JSON file's path) and the rest, and nothing is printed unless `events=True`.
    """

    def __init__(self, config=None, init_seed=None, data_seed=None, checkpoint_dir=None, events=None,
                 stream=None, handle_stop=None):
        """`handle_stop`: True — a stop only sets stop_requested (the program checkpoints and stops
        itself); False — signals are left alone; None (the default) — as True once the program
        reads stop_requested, else Python's own answer to the signal."""
        env = os.environ
        self.under_sweep = "SWEEP_RUN_DIR" in env
        path = config if isinstance(config, str) else env.get("SWEEP_CONFIG")
        if isinstance(config, dict):
            self.config = dict(config)
        elif path:
            with open(path, encoding="utf-8") as f:
                self.config = json.load(f)
        else:
            self.config = {}
        seeds = self.config.pop("seeds", {}) if isinstance(self.config.get("seeds"), dict) else {}
        self.init_seed = int(init_seed if init_seed is not None else env.get("SWEEP_INIT_SEED", seeds.get("init", 1)))
        self.data_seed = int(data_seed if data_seed is not None else env.get("SWEEP_DATA_SEED", seeds.get("data", 1)))
        self.run_dir = env.get("SWEEP_RUN_DIR", ".")
        self.checkpoint_dir = checkpoint_dir or env.get("SWEEP_CHECKPOINT_DIR") or os.path.join(self.run_dir, "checkpoint")
        self.resume = env.get("SWEEP_RESUME") == "1"
        self.threads = int(env.get("SWEEP_THREADS", "0")) or None
        self.device = env.get("SWEEP_DEVICE", "cpu")
        self.rank = int(env.get("RANK", "0"))
        self.world_size = int(env.get("WORLD_SIZE", "1"))
        stall = float(env.get("SWEEP_STALL_TIMEOUT", "600"))
        self.heartbeat_every = min(30.0, stall / 4) if stall > 0 else 30.0
        self.events = self.under_sweep if events is None else events
        self.stream = stream or sys.stdout
        self._stop = False
        self._handle_stop = handle_stop
        self._trains_since_poll = None  # None: stop_requested never read
        self._last = time.time()
        self._total_steps = None  # as start() announced it: a step past it is no step of the run
        if self.under_sweep and handle_stop is not False:  # SIGTERM (preemption), SIGINT: checkpoint, stop
            for s in (signal.SIGTERM, signal.SIGINT):
                signal.signal(s, self._on_signal)

    def get(self, dotted, default=None):
        """A dotted key of the config: run.get("train.lr")."""
        node = self.config
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    @property
    def stop_requested(self):
        """True after a stop (SIGTERM, SIGINT): write a checkpoint, then run.preempted(step, tokens)."""
        self._trains_since_poll = 0
        return self._stop

    @stop_requested.setter
    def stop_requested(self, value):
        self._stop = bool(value)

    def _on_signal(self, signum, frame):
        polling = self._trains_since_poll is not None and self._trains_since_poll <= 2
        if self._stop or self._handle_stop or polling:  # a repeat (sweep may send it twice) is the same request
            self._stop = True
            return
        # nobody is listening for the flag: Python's own answer, so that the run stops all the same
        signal.signal(signum, signal.SIG_DFL)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        os.kill(os.getpid(), signum)

    def emit(self, event, **fields):
        """Prints one event (rank 0 only: the others' stdout goes to the log)."""
        if not self.events or self.rank != 0:
            return
        record = {"event": event, "time": time.time()}
        record.update({k: v for k, v in fields.items() if v is not None})
        self.stream.write(json.dumps(record, allow_nan=False) + "\n")
        self.stream.flush()
        self._last = time.time()

    def _within(self, step):
        """A step of the run: sweep ignores every event but the end past the start's total_steps."""
        step = _whole("step", step)
        if self._total_steps and step > self._total_steps:
            raise ValueError(f"step {step} is past total_steps {self._total_steps}, which start() announced: sweep "
                             "would ignore it (only the end may be past it)")
        return step

    def start(self, step=0, tokens=0, total_steps=None, tokens_per_step=None, params=None, resumed=None, **extra):
        """`params`: the model's parameters — a scale ladder places the run at 6 × params × tokens.
        `total_steps`: the optimizer steps of the whole run; no train, eval or checkpoint event goes past it."""
        step = _whole("step", step)
        self._total_steps = _whole("total_steps", total_steps, True)
        self.emit("start", **extra, schema=SCHEMA, step=step, tokens=_whole("tokens", tokens),
                  total_steps=_whole("total_steps", total_steps, True),
                  tokens_per_step=_whole("tokens_per_step", tokens_per_step, True),
                  params=_whole("params", params, True), resumed=bool(step > 0 if resumed is None else resumed))

    def train(self, step, tokens, loss, lr=None, grad_norm=None, tokens_per_s=None):
        if step < 1:
            raise ValueError("a train event counts the step just taken: step >= 1")
        if self._trains_since_poll is not None:
            self._trains_since_poll += 1
        self.emit("train", step=self._within(step), tokens=_whole("tokens", tokens), loss=_number(loss),
                  lr=None if lr is None else _number(lr), grad_norm=None if grad_norm is None else _number(grad_norm),
                  tokens_per_s=None if tokens_per_s is None else _number(tokens_per_s))

    def eval(self, step, tokens, split, loss):
        if split not in ("val", "test"):
            raise ValueError(f'split must be "val" or "test", got {split!r}')
        self.emit("eval", step=self._within(step), tokens=_whole("tokens", tokens), split=split, loss=_number(loss))

    def checkpoint(self, step, tokens=None):
        self.emit("checkpoint", step=self._within(step), tokens=_whole("tokens", tokens, True))

    def heartbeat(self, step, phase="train", force=False):
        """Tells sweep's watchdog the run is alive; sent at most every quarter of its stall timeout."""
        if force or time.time() - self._last >= self.heartbeat_every:
            self.emit("heartbeat", step=self._within(step), phase=phase)

    def end(self, step, tokens=None, test_loss=None, test_bpb=None, status="done", reason=None):
        """The run's result. A "done" run reports a finite test loss: it is what sweep compares."""
        if status not in STATES:
            raise ValueError(f"status must be one of {STATES}, got {status!r}")
        if status == "done" and (test_loss is None or not math.isfinite(float(test_loss))):
            raise ValueError("a done run reports a finite test_loss")
        self.emit("end", status=status, step=_whole("step", step, True), tokens=_whole("tokens", tokens, True),
                  reason=None if reason is None else str(reason),
                  test_loss=None if test_loss is None else _number(test_loss),
                  test_bpb=None if test_bpb is None else _number(test_bpb))

    def preempted(self, step, tokens=None):
        """After writing a checkpoint on SIGTERM: says so and exits 75 (the run is re-queued)."""
        self.end(step, tokens, status="preempted", reason="stopped by a signal; resumes from its checkpoint")
        sys.exit(EXIT_PREEMPTED)

    def diverged(self, step, tokens=None, reason="non-finite loss"):
        self.end(step, tokens, status="diverged", reason=reason)
        sys.exit(EXIT_DIVERGED)
