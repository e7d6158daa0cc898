# `sweep run --until-decided` end to end: seeds are added round by round only to the interventions
# still undecided (and the baseline), each stops at the look that decided it, the rest at the cap;
# the report says how many seeds each got and why; a plain `sweep run` goes on with the design; a
# Ctrl-C or kill -9 in a later round loses nothing (kill -9 then resumed ends where an uninterrupted
# run does); and bad options are refused before anything is written.
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
prepare_bytes
# eval-often changes only when the validation loss is measured: the same training, the same test
# loss — equivalent at the first look, exactly. lr-big changes everything.
tiny_sweep s.yaml ud 20 "lr-big: {train.lr: 3e-2}" "eval-often: {eval.every: 10}" "dropout-off: {model.dropout: 0.0}"
echo "min_effect: 0.01" >> s.yaml

# ---- bad options: refused, naming the option, with nothing written ----
expect_rc 2 "$SWEEP" run s.yaml --results res --max-seeds 4 2> err.txt
grep -q -- "--max-seeds 4 needs --until-decided" err.txt || fail "--max-seeds alone: $(cat err.txt)"
expect_rc 2 "$SWEEP" run s.yaml --results res --until-decided --max-seeds 1 2> err.txt
grep -q -- "--max-seeds 1 is below the 2 seeds" err.txt || fail "--max-seeds below the seeds: $(cat err.txt)"
expect_rc 2 "$SWEEP" run s.yaml --results res --until-decided --max-seeds 200 2> err.txt
grep -q -- "--max-seeds 200 gives more than 64 looks of 2 seeds" err.txt || fail "too many looks: $(cat err.txt)"
sed 's/^seeds: .*/seeds: [1]/' s.yaml > one.yaml
expect_rc 2 "$SWEEP" run one.yaml --results res --until-decided 2> err.txt
grep -q -- "--until-decided: one.yaml declares 1 seed" err.txt || fail "one seed: $(cat err.txt)"
grep -v '^min_effect' s.yaml > nodelta.yaml
expect_rc 2 "$SWEEP" run nodelta.yaml --results res --until-decided 2> err.txt
grep -q -- "--until-decided: nodelta.yaml declares no min_effect" err.txt || fail "no min_effect: $(cat err.txt)"
sed 's/^seeds: .*/seeds: {init: [1, 2], data: [1]}/' s.yaml > crossed.yaml
expect_rc 2 "$SWEEP" run crossed.yaml --results res --until-decided 2> err.txt
grep -q "seeds are added to a list" err.txt || fail "crossed seeds: $(cat err.txt)"
[ ! -e res ] || fail "a refused run wrote $(ls -R res)"

# ---- a real run to the cap ----
"$SWEEP" run s.yaml --results res --until-decided --max-seeds 6 --devices cpu:2x1 > run.txt || fail "run: $(cat run.txt)"
grep "until decided" run.txt
grep -q "until decided: [0-9] undecided" run.txt || fail "no second round: $(cat run.txt)"
! grep -q "undecided (.*eval-often" run.txt || fail "eval-often got seeds after it was decided: $(cat run.txt)"
"$SWEEP" report ud --results res --out rep > table.txt 2> err.txt || fail "report: $(cat err.txt)"
cat table.txt
grep -qE "^[0-9]+ +eval-often +2 .*equivalent \(no-op\) +decided at look 1 \(2 seeds\)" table.txt ||
  fail "eval-often: $(grep eval-often table.txt)"
grep -q "Pocock-type alpha spending" table.txt || fail "the method is not named"
python3 - <<'PY' || fail "the seeds do not follow the verdicts"
import json
r = json.load(open("rep/report.json"))
assert r["design"]["sequential"] and r["design"]["max_seeds"] == 6 and r["design"]["first_seeds"] == 2, r["design"]
by = {v["name"]: v for v in r["variants"]}
most = 0
for name, v in by.items():
    if v["baseline"]:
        continue
    most = max(most, v["seeds"])
    if v["verdict"] == "undecided":
        assert v["seeds"] == 6 and v["stopped"] == "undecided at the cap (6 seeds)", v
    else:
        assert v["verdict"] in ("better", "worse", "equivalent"), v
        # decided at its last look: no seed was added after it
        assert v["stopped"] == "decided at look %d (%d seeds)" % (len(v["looks"]), v["seeds"]), v
assert by["base"]["seeds"] == most, (by["base"]["seeds"], most)
print("seeds follow the verdicts:", {n: (v["verdict"], v["seeds"]) for n, v in by.items()})
PY
runs=$(sql "SELECT COUNT(*) FROM sweep_runs WHERE sweep = 'ud'")
check_database

# ---- a plain `sweep run` goes on with the recorded design, trains nothing, keeps every seed ----
"$SWEEP" run s.yaml --results res --devices cpu:2x1 > again.txt || fail "again: $(cat again.txt)"
grep -q "was run --until-decided (--max-seeds 6): it goes on so" again.txt || fail "$(cat again.txt)"
! grep -q "start " again.txt || fail "a finished run was trained again: $(cat again.txt)"
[ "$(sql "SELECT COUNT(*) FROM sweep_runs WHERE sweep = 'ud'")" -eq "$runs" ] || fail "the added seeds left the sweep"

# ---- the database lost and rebuilt from the folder by `sweep ingest`: the design its looks were
# judged by and the seeds its rounds added come back (sweeps/ud.rounds), and so does its report ----
cp -r res rebuilt && rm -f rebuilt/sweep.db*
[ -s rebuilt/sweeps/ud.rounds ] || fail "no saved rounds beside the sweep file: $(ls rebuilt/sweeps)"
"$SWEEP" ingest rebuilt > ingest.txt || fail "ingest: $(cat ingest.txt)"
[ "$(DB=rebuilt/sweep.db sql "SELECT COUNT(*) FROM sweep_runs WHERE sweep = 'ud'")" -eq "$runs" ] ||
  fail "the added seeds were lost with the database"
[ "$(DB=rebuilt/sweep.db sql "SELECT design FROM sweeps WHERE name = 'ud'")" = "$(sql "SELECT design FROM sweeps WHERE name = 'ud'")" ] ||
  fail "the design was lost with the database: $(DB=rebuilt/sweep.db sql "SELECT design FROM sweeps")"
"$SWEEP" report ud --results res > orig.txt && "$SWEEP" report ud --results rebuilt > rebuilt.txt || fail "reports"
diff orig.txt rebuilt.txt || fail "the rebuilt database reports otherwise"
echo '{"max_seeds": "six"}' > rebuilt/sweeps/ud.rounds
expect_rc 1 "$SWEEP" ingest rebuilt 2> err.txt
grep -q "ud.rounds: not a saved seed design" err.txt || fail "a damaged rounds file: $(cat err.txt)"
# A report on test_bpb does not apply the file's margin, which is in nats per token.
"$SWEEP" report ud --results res --metric test_bpb --out rep-bpb > bpb.txt 2>&1 || fail "bpb: $(cat bpb.txt)"
grep -q "min_effect (0.01) is in nats per token" bpb.txt || fail "no note on test_bpb's margin: $(cat bpb.txt)"
[ "$(awk '$1 ~ /^[0-9]+$/' bpb.txt | grep -c equivalent)" -eq 0 ] ||
  fail "equivalence on test_bpb with the file's margin: $(cat bpb.txt)"
# A new intervention would split alpha anew, re-judging every earlier look: refused.
sed '/^interventions:/a\  lr-small: {train.lr: 1e-3}' s.yaml > grown.yaml
expect_rc 2 "$SWEEP" run grown.yaml --results res 2> err.txt
grep -q "alpha split among 3 interventions" err.txt || fail "a grown sweep: $(cat err.txt)"
# ... and so is a changed variant: its runs are no longer the ones judged
sed 's/^  base: {data: {dataset: data\/bytes}/&/; s/lr: 3e-3, grad_clip/lr: 2e-3, grad_clip/' s.yaml > changed.yaml
expect_rc 2 "$SWEEP" run changed.yaml --results res 2> err.txt
grep -q "changes (or drops) 'base' since its looks were judged" err.txt || fail "a changed baseline: $(cat err.txt)"
# ... and another cap is refused: the earlier looks were judged by this one
expect_rc 2 "$SWEEP" run s.yaml --results res --until-decided --max-seeds 8 2> err.txt
grep -q "was run --until-decided with 2 seeds, min_effect 0.01, no better_by and --max-seeds 6" err.txt || fail "$(cat err.txt)"
# ... and so is a margin added after the looks: it decides which interventions get seeds
sed 's/^min_effect: 0.01/&\nbetter_by: 0.005/' s.yaml > margin.yaml
grep -q "^better_by: 0.005" margin.yaml || fail "the test's margin.yaml has no better_by"
expect_rc 2 "$SWEEP" run margin.yaml --results res 2> err.txt
grep -q "no better_by and --max-seeds 6" err.txt || fail "a margin added after the looks: $(cat err.txt)"

# ---- Ctrl-C in a later round: the next `sweep run` picks up where it stopped ----
sed 's/^sweep: ud/sweep: ud2/; s/train.lr: 3e-2/train.lr: 2e-2/' s.yaml > s2.yaml
"$SWEEP" run s2.yaml --results res --until-decided --max-seeds 6 --devices cpu:2x1 > first.txt 2>&1 &
sched=$!
for _ in $(seq 1 600); do grep -q "until decided: .* undecided" first.txt && break; sleep 0.05; done
grep -q "until decided: .* undecided" first.txt || { kill $sched; fail "no second round: $(cat first.txt)"; }
kill -INT $sched
wait $sched && fail "an interrupted sweep exited 0" || true
# Interrupted, the design waits for its runs: it has not stopped.
"$SWEEP" report ud2 --results res --out rep-mid > mid.txt 2>&1 || fail "report mid-way: $(cat mid.txt)"
! grep -q "the design stops there" mid.txt || fail "an interrupted look read as a stopped design: $(cat mid.txt)"
# Resuming, the seeds the first run added stay in the sweep all along (a report meanwhile sees them).
members=$(sql "SELECT COUNT(*) FROM sweep_runs WHERE sweep = 'ud2'")
"$SWEEP" run s2.yaml --results res --until-decided --max-seeds 6 --devices cpu:2x1 > second.txt &
sched=$!
for _ in $(seq 1 600); do grep -q "\] start " second.txt && break; sleep 0.05; done
[ "$(sql "SELECT COUNT(*) FROM sweep_runs WHERE sweep = 'ud2'")" -ge "$members" ] ||
  { kill $sched; fail "the added seeds left the sweep while it resumed"; }
wait $sched || fail "$(cat second.txt)"
grep -q "until decided: \(every intervention is decided\|stopped at the cap\)" second.txt || fail "$(cat second.txt)"
"$SWEEP" report ud2 --results res --format json --out rep2 > r2.json 2>/dev/null || fail "report ud2"
python3 - <<'PY' || fail "ud2 after a Ctrl-C"
import json
r = json.load(open("r2.json"))
for v in r["variants"]:
    assert v["finished"] == v["runs"], v          # every run it holds finished
    assert v["verdict"] != "undecided" or v["seeds"] == 6, v
PY
check_database

# ---- kill -9 of the scheduler in a later round: the next `sweep run` ends where an
# uninterrupted one does — the same runs in the sweep, the same test losses, the same verdicts ----
sed 's/^sweep: ud/sweep: ud3/; s/train.lr: 3e-2/train.lr: 2.5e-2/' s.yaml > s3.yaml
"$SWEEP" run s3.yaml --results ref --until-decided --max-seeds 6 --devices cpu:2x1 > ref.txt || fail "$(cat ref.txt)"
"$SWEEP" run s3.yaml --results res --until-decided --max-seeds 6 --devices cpu:2x1 > killed.txt 2>&1 &
sched=$!
for _ in $(seq 1 600); do grep -q "until decided: .* undecided" killed.txt && break; sleep 0.05; done
grep -q "until decided: .* undecided" killed.txt || { kill $sched; fail "no second round: $(cat killed.txt)"; }
kill -9 $sched
wait $sched 2>/dev/null || true
# A worker started in the instant before the kill is not yet known to the database: the next
# `sweep run` skips its run while it still trains (exit 1, "another process (pid N) trains it")
# and, as it says, the one after takes the run up.
set +e; "$SWEEP" run s3.yaml --results res --devices cpu:2x1 > after.txt; rc=$?; set -e
if [ "$rc" -eq 1 ] && grep -q "another process (pid [0-9]*) trains it" after.txt; then
  for pid in $(grep -o "another process (pid [0-9]*)" after.txt | grep -o "[0-9]*"); do
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  done
  "$SWEEP" run s3.yaml --results res --devices cpu:2x1 > after.txt || fail "after kill -9, again: $(cat after.txt)"
elif [ "$rc" -ne 0 ]; then
  fail "after kill -9: $(cat after.txt)"
fi
outcome() {  # the sweep's runs with their test losses, and the verdicts
  DB=$1/sweep.db sql "SELECT s.variant, r.init_seed, r.status, printf('%.6f', r.test_loss) FROM sweep_runs s
                      JOIN runs r USING (run_id) WHERE s.sweep = 'ud3' ORDER BY 1, 2"
  "$SWEEP" report ud3 --results "$1" --format json --out "$1/rep" 2>/dev/null |
    python3 -c "import json, sys; print(sorted((v['name'], v['verdict'], v['stopped']) for v in json.load(sys.stdin)['variants']))"
}
[ "$(outcome res)" = "$(outcome ref)" ] || fail "after kill -9: $(outcome res) — uninterrupted: $(outcome ref)"
check_database
# calibrate refuses effects that are not finite multiples of δ
expect_rc 2 "$SWEEP" calibrate --sigma 0.01 --rho 0.5 --min-effect 0.01 --effects 1e999 --replicates 2 2> err.txt
grep -q -- "--effects 1e999: '1e999' is not a finite number" err.txt || fail "calibrate --effects 1e999: $(cat err.txt)"
expect_rc 2 "$SWEEP" calibrate --sigma 0.01 --rho 0.5 --min-effect 0.01 --effects 1,,2 --replicates 2 2> err.txt
grep -q -- "--effects 1,,2: '' is not a finite number" err.txt || fail "calibrate --effects 1,,2: $(cat err.txt)"
expect_rc 2 "$SWEEP" calibrate --sigma 0.01 --rho nan --min-effect 0.01 --replicates 2 2> err.txt
grep -q -- "--rho: 'nan' is not a number from -0.99 to 0.9999" err.txt || fail "calibrate --rho nan: $(cat err.txt)"
echo "until_decided: ok"
