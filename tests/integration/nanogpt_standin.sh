# examples/nanogpt/sweep.yaml — its command, keys and trainer.output rules unchanged — run on a
# stand-in for upstream nanoGPT that prints nanoGPT's exact lines (tests/data/trainers/
# nanogpt-standin): every arm judged from the lines alone; Ctrl-C between checkpoints says where
# the run stopped and that it resumes from its last checkpoint, and the next `sweep run` resumes it
# with --init_from=resume; a program that ignores the stop is killed after trainer.stop_grace; a
# program whose lines never match fails, not retried, its first lines quoted; a broken pattern is
# a file:line:col error that writes nothing.
source "$(dirname "$0")/lib.bash"
repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p ex/nanoGPT/config
cp "$repo"/examples/nanogpt/{sweep.yaml,run.sh,seed_hook.py} ex/
standin=$SWEEP_TEST_DATA/trainers/nanogpt-standin
cp "$standin"/{train.py,configurator.py,model.py} ex/nanoGPT/ && cp "$standin"/config/*.py ex/nanoGPT/config/
cp "$standin/score.py" ex/
sed -i 's/^seeds: \[1, 2, 3\]/seeds: [1, 2]/' ex/sweep.yaml
# base: is optional when every key has a default; the stand-in ignores `compile`: a no-op, said so
sed -i -e '/^base: {}/d' -e 's/^  no-weight-decay: {weight_decay: 0.0}/&\n  compile-on: {compile: "True"}/' ex/sweep.yaml
"$SWEEP" run ex/sweep.yaml --results res --devices cpu:2x1 > run.txt 2>&1 || fail "the study: $(cat run.txt)"
"$SWEEP" report nanogpt --results res --out rep --format json > rep.json || fail "its report"
python3 - <<'PY' || fail "the report read from nanoGPT's lines: $(cat rep.json)"
import json
r = json.load(open("rep.json"))
v = {x["name"]: x for x in r["variants"]}
assert set(v) == {"baseline", "no-dropout", "no-clipping", "no-weight-decay", "compile-on"}, v
assert all(x["seeds"] == 2 for x in v.values()), v
assert v["no-dropout"]["verdict"] == "better" and v["no-clipping"]["verdict"] == "worse", v
assert v["compile-on"].get("no_op") is True and not v["no-dropout"].get("no_op"), v
assert any("compile-on: no-op" in n for n in r["notes"]), r["notes"]
print("report: ok")
PY
run=$(awk '$1 == "baseline" && $2 == "1" {print $3}' <<< "$("$SWEEP" plan ex/sweep.yaml --results res)")
python3 - "res/runs/$run/events.jsonl" <<'PY' || fail "the events made of nanoGPT's lines: $(head -c 2000 "res/runs/$run/events.jsonl")"
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1])]
start = evs[0]
assert start["event"] == "start" and start["step"] == 0 and start["total_steps"] == 301, start
assert start["tokens_per_step"] == 768 and start["params"] == 98304, start
train = [e for e in evs if e["event"] == "train"]
assert train[0]["step"] == 1 and train[-1]["step"] == 301 and train[-1]["tokens"] == 301 * 768, train[-1]
assert any("tokens_per_s" in e for e in train)
assert [e["step"] for e in evs if e["event"] == "eval"] == [0, 100, 200, 300]
assert [e["step"] for e in evs if e["event"] == "checkpoint"] == [100, 200, 300]
assert evs[-1]["event"] == "end" and evs[-1]["status"] == "done" and evs[-1]["test_loss"] > 0, evs[-1]
print("events: ok")
PY
grep -q "^Overriding: max_iters = 300" "res/runs/$run/worker.log" || fail "nanoGPT's own lines are not in worker.log"

# Ctrl-C between checkpoints, then the next `sweep run` resumes with --init_from=resume
sed -e 's/^sweep: nanogpt/sweep: stopped/' -e 's/^seeds: \[1, 2\]/seeds: [1]/' -e '/^  no-/d' -e '/^  compile-on/d' \
    -e 's/max_iters: {type: int, default: 300/max_iters: {type: int, default: 3000/' ex/sweep.yaml > ex/long.yaml
"$SWEEP" run ex/long.yaml --results res > stop.txt 2>&1 &
sched=$!
long=$(awk '$1 == "baseline" {print $3}' <<< "$("$SWEEP" plan ex/long.yaml --results res)")
for _ in $(seq 1 600); do grep -q '"step":151,' "res/runs/$long/events.jsonl" 2>/dev/null && break; sleep 0.05; done
kill -INT "$sched"
expect_rc 130 wait "$sched"
grep -q "interrupted baseline seed 1 .* at step [0-9]* (not checkpointed at the stop: it resumes from its last checkpoint)" stop.txt ||
  fail "where the run stopped: $(cat stop.txt)"
grep -q "sweep: stopped by a signal at step [0-9]*; it resumes from its checkpoint of step 100" "res/runs/$long/worker.log" ||
  fail "the stop in worker.log: $(tail -5 "res/runs/$long/worker.log")"
"$SWEEP" run ex/long.yaml --results res > resume.txt 2>&1 || fail "the resume: $(cat resume.txt)"
grep -q "start baseline seed 1 .*, resuming" resume.txt || fail "not resumed: $(cat resume.txt)"
grep -q "^Resuming training from .*/runs/$long/checkpoint" "res/runs/$long/worker.log" || fail "no --init_from=resume"
grep -q '"resumed":true,"schema":1,"step":100,' "res/runs/$long/events.jsonl" || fail "the resumed start: $(grep start "res/runs/$long/events.jsonl")"

# a program deaf to the stop: killed after trainer.stop_grace
sed -e 's/^sweep: stopped/sweep: deaf/' -e 's/^  name: nanogpt/  name: nanogpt\n  stop_grace: 1/' \
    -e 's/"--always_save_checkpoint=True",/"--always_save_checkpoint=True", "--deaf=True",/' ex/long.yaml > ex/deaf.yaml
"$SWEEP" run ex/deaf.yaml --results res > deaf.txt 2>&1 &
sched=$!
deaf=$(awk '$1 == "baseline" {print $3}' <<< "$("$SWEEP" plan ex/deaf.yaml --results res)")
wait_for_train_events "res/runs/$deaf/events.jsonl" 5
kill -INT "$sched"
SECONDS=0
expect_rc 130 wait "$sched"
[ "$SECONDS" -lt 20 ] || fail "the deaf program was not killed after its grace"
grep -q "interrupted baseline seed 1 .* at step" deaf.txt || fail "the deaf run: $(cat deaf.txt)"
grep -q "sweep: the program was still running 1 s after the stop (trainer.stop_grace): killed" "res/runs/$deaf/worker.log" ||
  fail "the kill is not said: $(tail -3 "res/runs/$deaf/worker.log")"

# lines that never match: failed, not retried, the first lines quoted
sed -e 's/^sweep: nanogpt/sweep: unread/' -e "s/train: {line: '^iter /train: {line: '^epoch /" -e "s/eval: '^step /eval: '^Step /" ex/sweep.yaml > ex/unread.yaml
set +e; "$SWEEP" run ex/unread.yaml --results res > unread.txt 2>&1; rc=$?; set -e
[ "$rc" = 1 ] || fail "unread lines: exit $rc: $(cat unread.txt)"
grep -q "no line matched the train rule (trainer.output.train): the program's first lines: 'Overriding config with" unread.txt ||
  grep -q "no line matched the train rule" res/runs/*/worker.log || fail "unread lines: $(cat unread.txt)"
[ "$(grep -c 'retrying' unread.txt)" = 0 ] || fail "an unreadable program was retried: $(cat unread.txt)"

# a pattern that does not compile: file:line:col, nothing written
sed -e 's/^sweep: nanogpt/sweep: broken/' -e "s/result: '^test loss (?<loss>\\\\S+)'/result: '^test loss (?<loss>\\\\S+'/" ex/sweep.yaml > ex/broken.yaml
grep -q "result: '^test loss (?<loss>\\\\S+'" ex/broken.yaml || fail "the broken pattern was not written"
set +e; "$SWEEP" run ex/broken.yaml --results fresh > broken.txt 2>&1; rc=$?; set -e
[ "$rc" = 2 ] || fail "the broken pattern: exit $rc: $(cat broken.txt)"
grep -q "ex/broken.yaml:[0-9]*:[0-9]*: 'trainer.output.result': the regular expression does not compile: missing closing parenthesis" broken.txt ||
  fail "the broken pattern: $(cat broken.txt)"
[ ! -e fresh ] || fail "a refused sweep wrote $(ls fresh)"
echo "nanogpt_standin: ok"
