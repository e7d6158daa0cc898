# `sweep run` and `sweep ingest` record the same row for a run (docs/reference.md, "the order of
# events"): a property over a corpus of events files, each replayed by a trainer of your own under
# the real scheduler — the named cases of issue 59 (an end past total_steps, a train step jumping
# past it, an exit 0 without an end event, crashes, a SIGKILL, a preemption, a done before the
# start, a done without a test loss), then sequences drawn at random with lines mutated byte by
# byte. For each, the database `sweep run` wrote and one `sweep ingest` rebuilt from the folder
# alone hold the same runs row (status, steps, tokens, the result; the error of every run not
# finished) and the same metrics rows.
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
sql() { sqlite3 "$1" "$2"; }

mkdir cases
cat > replay.sh <<'SH'
#!/bin/bash
# replay.sh: prints cases/SEED.jsonl as its stdout, then exits as cases/SEED.exit says (kill: SIGKILL
# itself); on its Nth attempt cases/SEED.N.jsonl and .N.exit where they exist
n=$(( $(cat "$SWEEP_RUN_DIR/attempts" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$SWEEP_RUN_DIR/attempts"
case_=cases/$SWEEP_INIT_SEED
[ -f "$case_.$n.jsonl" ] && case_=$case_.$n
cat "$case_.jsonl"
code=$(cat "$case_.exit")
[ "$code" = kill ] && kill -9 $$
exit "$code"
SH
chmod +x replay.sh

named=15
python3 - "$named" <<'PY'
import json, random, sys
named = int(sys.argv[1])
def j(**kw): return json.dumps(kw)
def start(total, step=0): return j(event="start", step=step, total_steps=total, tokens_per_step=64)
def train(s, tokens=None, loss=3.0): return j(event="train", step=s, tokens=64 * s if tokens is None else tokens, loss=loss)
def end(status, **kw): return j(event="end", status=status, **kw)
cases = {
  1: ([start(2), train(1), train(2), end("done", step=3, test_loss=2.9)], 0),             # nanoGPT's loop end
  2: ([start(4), train(1), train(2), train(102), train(3), train(4),
       j(event="eval", step=5, split="val", loss=2.0), end("done", step=4, test_loss=2.8)], 0),  # a step past total_steps
  3: ([start(4), train(1), train(2)], 0),                                                  # exit 0, no end event
  4: ([start(4), train(1)], 1),                                                            # a crash, retried
  5: ([start(4), train(1), end("failed", reason="out of data")], 1),                       # its own reason, then exit 1
  6: ([start(4), train(1), end("preempted")], 75),                                         # preempted until spent
  7: ([start(4), train(1), train(2)], "kill"),                                             # SIGKILL
  8: ([start(4), train(1), end("done", step=4)], 0),                                       # done without a test loss
  9: ([end("done", step=4, test_loss=1.0), start(4), train(1), end("done", step=4, test_loss=2.5)], 0),  # done first
  10: ([start(4), train(1, loss="nan")], 3),                                               # diverged by its exit alone
  11: ([], 0),                                                                             # nothing at all
  12: ([start(4), train(1), train(2), end("diverged", step=2)], 3),
  13: ([start(4), train(1), b"bytes that are no UTF-8: \xff\xfe\xc3", "x" * 300000], 1),  # a crash's log tail: long, not UTF-8
  14: ([start(4), train(1), train(2), train(3)], 75),  # preempted at 3, then (attempt 2, below) resumed there and done
  15: ([start(4), train(1)], 1),                       # a crash, then (attempt 2) a retry that says no start
}
attempts = {14: ([j(event="start", step=3, total_steps=4, tokens_per_step=64), end("done", step=4, test_loss=2.0)], 0),
            15: ([train(2), train(3), j(event="eval", step=3, split="val", loss=2.0)], 1)}
for n, (lines, code) in attempts.items():
    with open(f"cases/{n}.2.jsonl", "w") as f: f.write("".join(l + "\n" for l in lines))
    with open(f"cases/{n}.2.exit", "w") as f: f.write(f"{code}\n")
assert len(cases) == named
rng = random.Random(59)
alphabet = '{}[]":,0123456789.eE-+ntrufalsx\\ '
def mutate(line):
    s = list(line)
    for _ in range(rng.randint(1, 3)):
        if not s: break
        at = rng.randrange(len(s))
        op = rng.randrange(3)
        if op == 0: s[at] = rng.choice(alphabet)
        elif op == 1: s.insert(at, rng.choice(alphabet))
        else: del s[at:]
    return "".join(s)
for n in range(named + 1, named + 47):
    total = rng.choice([0, 3, 5])
    lines, step = [], 0
    if rng.random() < 0.9: lines.append(start(total, step=rng.choice([0, 0, 2])))
    for _ in range(rng.randint(0, 9)):
        r = rng.random()
        if r < 0.5:
            step = rng.choice([step + 1, step + 1, step + 1, step, max(1, step - 1), step + 50])
            lines.append(train(step, loss=rng.choice([3.0, 2.5, "nan", "inf"])))
        elif r < 0.65: lines.append(j(event="eval", step=rng.choice([step, step + 9]), split=rng.choice(["val", "test", "dev"]), loss=2.5))
        elif r < 0.75: lines.append(j(event=rng.choice(["heartbeat", "checkpoint"]), step=step, phase="train"))
        elif r < 0.8: lines.append(start(total, step=step))
        elif r < 0.9: lines.append(rng.choice(["a line of the trainer's own", "{not json", "[1,2]", '{"event":7}']))
        else: lines.append(end(rng.choice(["failed", "preempted"]), reason="mid"))
    if rng.random() < 0.85:
        status = rng.choice(["done", "done", "done", "diverged", "failed", "preempted", "interrupted", "bogus"])
        fields = dict(step=rng.choice([step, step + 1, total]))
        if status == "done": fields["test_loss"] = rng.choice([2.5, 2.25, "nan"] + [None] * 1)
        fields = {k: v for k, v in fields.items() if v is not None}
        lines.append(end(status, **fields))
    if rng.random() < 0.3: lines.append(end("done", step=step, test_loss=9.0))
    lines = [mutate(l) if rng.random() < 0.12 else l for l in lines]
    cases[n] = (lines, rng.choice([0, 0, 0, 1, 2, 3, 75, "kill"]))
for n, (lines, code) in cases.items():
    with open(f"cases/{n}.jsonl", "wb") as f:
        f.write(b"".join((l if isinstance(l, bytes) else l.encode()) + b"\n" for l in lines))
    with open(f"cases/{n}.exit", "w") as f: f.write(f"{code}\n")
print(len(cases))
PY
total=$(ls cases | grep -cE '^[0-9]+\.exit$')
seeds=$(seq -s, 1 "$total")
cat > agree.yaml <<YAML
sweep: agree
baseline: base
seeds: [$seeds]
trainer:
  command: [./replay.sh]
  files: [replay.sh]
  keys: {note: none}
base: {}
interventions:
  base: {}
YAML
# exits non-zero: runs fail, by design
"$SWEEP" run agree.yaml --results res --devices cpu:2x1 --stall-timeout 5 --retries 1 --max-preemptions 1 > run.txt 2>&1 || true
grep -q "agree: .* of $total runs finished" run.txt || fail "the sweep did not end: $(tail -20 run.txt)"
cp -r res copy && rm copy/sweep.db*
"$SWEEP" ingest copy > ingest.txt 2>&1 || fail "ingest: $(cat ingest.txt)"

# The rows, keyed by seed: the error only where the run is not finished (a note on how a worker left
# after its result is the scheduler's, not the folder's)
rows() {
  sql "$1" "SELECT r.init_seed, r.status, r.steps, r.tokens, r.total_steps, quote(r.test_loss), quote(r.test_bpb),
               quote(r.last_loss), quote(r.test_blocks), CASE WHEN r.status IN ('done', 'diverged') THEN '' ELSE replace(r.error, char(10), '\\n') END
            FROM runs r ORDER BY r.init_seed"
}
metrics() {
  sql "$1" "SELECT r.init_seed, m.split, m.step, m.tokens, quote(m.loss), m.loss_status FROM metrics m
            JOIN runs r USING (run_id) ORDER BY r.init_seed, m.split, m.step"
}
rows res/sweep.db > run-rows.txt
rows copy/sweep.db > ingest-rows.txt
metrics res/sweep.db > run-metrics.txt
metrics copy/sweep.db > ingest-metrics.txt
[ "$(wc -l < run-rows.txt)" = "$total" ] || fail "$(wc -l < run-rows.txt) rows of $total runs"
diff run-rows.txt ingest-rows.txt > rows.diff || fail "sweep run and sweep ingest disagree (< run, > ingest): $(cat rows.diff)"
diff run-metrics.txt ingest-metrics.txt > metrics.diff || fail "metrics disagree (< run, > ingest): $(cat metrics.diff)"

# The named cases, as each side records them
row() { awk -F'|' -v s="$1" '$1 == s' run-rows.txt; }
expect_row() {  # expect_row SEED PATTERN
  grep -Eq "$2" <<< "$(row "$1")" || fail "case $1: $(row "$1"), expected $2"
}
expect_row 1 '^1\|done\|2\|128\|2\|2\.9\|'                       # its end past total_steps is its end
expect_row 2 '^2\|done\|4\|256\|4\|2\.8\|'                       # step 102 ignored, steps 3 and 4 taken
expect_row 3 '^3\|failed\|2\|128\|4\|NULL\|.*\|exited 0 without an end event$'
expect_row 4 '^4\|failed\|1\|64\|4\|NULL\|'
expect_row 5 '^5\|failed\|'
expect_row 6 '^6\|failed\|.*stopped by SIGTERM 2 times'
expect_row 7 '^7\|(failed|oom)\|'
expect_row 8 '^8\|failed\|.*without a test_loss'
expect_row 9 '^9\|(failed|done)\|'
expect_row 10 '^10\|diverged\|'
expect_row 11 '^11\|failed\|0\|0\|'
expect_row 12 '^12\|diverged\|2\|128\|'
expect_row 13 '^13\|failed\|1\|64\|.*no UTF-8'
expect_row 14 '^14\|done\|3\|192\|4\|2\.0\|'                 # resumed at 3: its tokens there, not 0
expect_row 15 '^15\|failed\|1\|64\|'                         # a retry's steps before its start are none
grep -q 'sweep: ignored (step 102 past the run.s total_steps 4)' "res/runs/$(sql res/sweep.db "SELECT run_id FROM runs WHERE init_seed = 2")/worker.log" ||
  fail "the ignored step is not said in the log"
# the scheduler's reading of an exit is in the folder, marked as its own
r3=$(sql res/sweep.db "SELECT run_id FROM runs WHERE init_seed = 3")
grep -q '"by":"sweep".*"reason":"exited 0 without an end event"\|"reason":"exited 0 without an end event".*"by":"sweep"' "res/runs/$r3/events.jsonl" ||
  fail "no end of the scheduler's in $(cat "res/runs/$r3/events.jsonl")"

# A folder whose events stop without an end (the worker and the scheduler killed together): resumable
grep -v '"event":"end"' "copy/runs/$r3/events.jsonl" > e && mv e "copy/runs/$r3/events.jsonl"
rm copy/sweep.db*
"$SWEEP" ingest copy > /dev/null 2>&1 || fail "ingest again"
[ "$(sql copy/sweep.db "SELECT status FROM runs WHERE run_id = '$r3'")" = interrupted ] ||
  fail "an attempt without an end: $(sql copy/sweep.db "SELECT status, error FROM runs WHERE run_id = '$r3'")"
grep -q "resumable" <<< "$("$SWEEP" plan agree.yaml --results copy 2>&1 | awk -v r="$r3" '$3 == r')" ||
  fail "not resumable in the plan: $("$SWEEP" plan agree.yaml --results copy 2>&1)"
echo "run_ingest_agree: ok ($total events files)"
