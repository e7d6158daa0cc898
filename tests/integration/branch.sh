# Interventions branched from the baseline's checkpoint (`branch: {at: f}`) end to end: each
# seed's baseline pauses at the branch step, checkpointed, and its branches start there from that
# checkpoint; they train only what is left. A change that only acts after the branch point (a WSD
# cooldown from 80%) gives bitwise the test losses of the same intervention trained from scratch —
# the branch's prefix is its parent's, and its resume with a changed config exact; the baseline's
# own test losses are those of a baseline that never paused. Bad input is refused, nothing written;
# a branch whose parent trained past the point is not started, and says why.
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
prepare_bytes
# wsd: the learning rate constant (the baseline's) until step 80 of 100, then decayed; nodrop: no dropout
tiny_sweep scratch.yaml br 100 "wsd: {train.schedule: wsd, train.decay: 0.2, train.min_lr: 3e-4}" \
  "nodrop: {model.dropout: 0.0}"
{ cat scratch.yaml; echo "branch: {at: 0.8}"; } > s.yaml

# ---- bad input: refused, naming why, with nothing written ----
sed 's/^branch: .*/branch: {at: 1.2}/' s.yaml > past.yaml
expect_rc 2 "$SWEEP" run past.yaml --results res 2> err.txt
grep -q "past.yaml:.*branch: the branch point is a fraction of training strictly between 0 and 1, not '1.2' (at 1 or past the end nothing is left to train)" err.txt ||
  fail "a branch past the end: $(cat err.txt)"
sed 's/^branch: .*/branch: {at: 0}/' s.yaml > zero.yaml
expect_rc 2 "$SWEEP" run zero.yaml --results res 2> err.txt
grep -q "strictly between 0 and 1, not '0'" err.txt || fail "a branch at 0: $(cat err.txt)"
sed 's/^branch: .*/branch: {at: 0.99}/' s.yaml > last.yaml
expect_rc 2 "$SWEEP" run last.yaml --results res 2> err.txt
grep -q "'wsd' branches from the baseline at 99% of training, where the baseline has no validation point before its end (eval.every 20 of its 100 steps)" err.txt ||
  fail "a branch after the last validation point: $(cat err.txt)"
sed 's/^  nodrop: .*/&\n  deeper: {model.n_layer: 3}/' s.yaml > arch.yaml
expect_rc 2 "$SWEEP" run arch.yaml --results res 2> err.txt
grep -q "'deeper' branches from the baseline at 80% of training, and sets model.n_layer: a branch starts from the baseline's checkpoint" err.txt ||
  fail "an architecture branched: $(cat err.txt)"
grep -q "may change only model.dropout, train.lr, train.min_lr, train.schedule" err.txt || fail "no list of what may change"
sed 's/^  base: {}/  base: {branch: {at: 0.5}}/' s.yaml > base.yaml
expect_rc 2 "$SWEEP" run base.yaml --results res 2> err.txt
grep -q "the baseline 'base' is what the interventions branch from" err.txt || fail "a branched baseline: $(cat err.txt)"
expect_rc 2 "$SWEEP" run s.yaml --results res --until-decided 2> err.txt
grep -q -- "--until-decided: s.yaml branches its interventions" err.txt || fail "with --until-decided: $(cat err.txt)"
echo "min_effect: 0.01" >> s.yaml
expect_rc 2 "$SWEEP" run s.yaml --results res --eliminate 2> err.txt
grep -q -- "--eliminate: a sweep whose interventions branch" err.txt || fail "with --eliminate: $(cat err.txt)"
[ ! -e res ] || fail "a refused run wrote $(ls -R res)"

# ---- from scratch, and branched: the same cooldown, bitwise ----
"$SWEEP" run scratch.yaml --results res-a --devices cpu:2x1 > a.txt || fail "from scratch: $(cat a.txt)"
"$SWEEP" run s.yaml --results res --devices cpu:2x1 > run.txt || fail "branched: $(cat run.txt)"
grep -E "branch|paused" run.txt
[ "$(count "to step 80 (its branches' start)" run.txt)" = 2 ] || fail "the baselines did not train to the branch: $(cat run.txt)"
[ "$(count "its branches start from its checkpoint" run.txt)" = 2 ] || fail "no baseline paused for its branches"
losses() {  # variant, seed -> its test loss, every digit
  DB=$1 sql "SELECT printf('%.17g', r.test_loss) FROM runs r JOIN sweep_runs v ON v.run_id = r.run_id
             WHERE v.variant = '$2' AND r.init_seed = $3 AND r.status = 'done'"
}
for seed in 1 2; do
  for variant in base wsd; do
    a=$(losses res-a/sweep.db "$variant" "$seed") b=$(losses res/sweep.db "$variant" "$seed")
    [ -n "$a" ] && [ "$a" = "$b" ] || fail "$variant seed $seed: from scratch $a, branched $b"
  done
  [ "$(losses res-a/sweep.db nodrop "$seed")" != "$(losses res/sweep.db nodrop "$seed")" ] ||
    fail "dropout off from step 80 trained as dropout off from step 0"
done
# a branch's run: its parent's id and the step in its config (and so its id), 20 steps trained
base1=$(DB=res/sweep.db sql "SELECT r.run_id FROM runs r JOIN sweep_runs v ON v.run_id = r.run_id
                             WHERE v.variant = 'base' AND r.init_seed = 1")
wsd1=$(DB=res/sweep.db sql "SELECT r.run_id FROM runs r JOIN sweep_runs v ON v.run_id = r.run_id
                            WHERE v.variant = 'wsd' AND r.init_seed = 1")
grep -A2 "^branch:" "res/runs/$wsd1/config.yaml" > branch.txt
grep -q "from: $base1" branch.txt && grep -q "step: 80" branch.txt || fail "the branch's config: $(cat branch.txt)"
[ -e "res/runs/$wsd1/checkpoint/branch.pt" ] || fail "no start kept in the branch's folder"
grep -q '"event":"start".*"resumed":true' "res/runs/$wsd1/events.jsonl" || fail "the branch did not start resumed"
[ "$(DB=res/sweep.db sql "SELECT min(step) || '-' || max(step) FROM metrics WHERE run_id = '$wsd1' AND split = 'train'")" = 81-100 ] ||
  fail "the branch's train steps: $(DB=res/sweep.db sql "SELECT min(step), max(step) FROM metrics WHERE run_id = '$wsd1' AND split = 'train'")"
grep -q "branched from run $base1 at step 80" "res/runs/$wsd1/events.jsonl" || fail "no note of the branch"
# again: nothing left to train
"$SWEEP" run s.yaml --results res --devices cpu:2x1 > again.txt || fail "again: $(cat again.txt)"
grep -q "6 already finished, 0 to run" again.txt || fail "again: $(cat again.txt)"
"$SWEEP" report br --results res --out rep > table.txt || fail "report: $(cat table.txt)"
cat table.txt
grep -q "branched from the baseline at step 80" table.txt || fail "the report does not say the branches"

# ---- the branches of a baseline that trained past the point: not started, said so ----
# sweep plan says it before any run: not pending — orphaned, and why
"$SWEEP" plan s.yaml --results res-a > orphan_plan0.txt
[ "$(grep -c "^wsd .* orphaned " orphan_plan0.txt)" = 2 ] || fail "plan before the run: $(cat orphan_plan0.txt)"
# (s.yaml is a second file under scratch.yaml's sweep name there: refused naming both, unless --replace)
expect_rc 2 "$SWEEP" run s.yaml --results res-a --devices cpu:2x1 2> err.txt
grep -q "sweep br in res-a is .*/scratch.yaml's, and s.yaml names its sweep br too — it would take the name over" err.txt ||
  fail "a second file under the name: $(cat err.txt)"
grep -q "pass --replace to make br its sweep" err.txt || fail "no fix named: $(cat err.txt)"
expect_rc 1 "$SWEEP" run s.yaml --results res-a --devices cpu:2x1 --replace > orphan.txt
grep -q -- "--replace: sweep br was .*/scratch.yaml's; it is s.yaml's from now on" orphan.txt ||
  fail "--replace does not say what it replaces: $(head -3 orphan.txt)"
grep -q "not started wsd seed 1 (.*): its parent, the baseline's run .*, has trained past step 80 without" orphan.txt ||
  fail "a branch of a finished baseline: $(cat orphan.txt)"
grep -q "4 branches not started" orphan.txt || fail "the summary: $(tail -1 orphan.txt)"
"$SWEEP" plan s.yaml --results res-a > orphan_plan.txt
[ "$(grep -c "^wsd .* orphaned " orphan_plan.txt)" = 2 ] || fail "plan shows the branches as: $(cat orphan_plan.txt)"
grep -q "^orphaned wsd seed 1 .*: its parent, the baseline's run .*, has trained past step 80" orphan_plan.txt ||
  fail "plan does not say why: $(cat orphan_plan.txt)"
# ---- a parent that crashes before the branch point, retried: its branches start in the same `sweep run` ----
"$SWEEP" plan s.yaml --results res-c > plan.txt
crashing=$(awk '$1 == "base" && $2 == "1" {print $3}' plan.txt)
mkdir -p "res-c/runs/$crashing"
echo "crash_once_at_step:50" > "res-c/runs/$crashing/test-fault"
"$SWEEP" run s.yaml --results res-c --devices cpu:2x1 > crash.txt || fail "a retried parent: $(cat crash.txt)"
grep -q "crash base seed 1 .*retrying from" crash.txt || fail "no crash and retry: $(cat crash.txt)"
! grep -q "not started" crash.txt || fail "branches written off while their parent was retried: $(cat crash.txt)"
[ "$(DB=res-c/sweep.db sql "SELECT count(*) FROM runs WHERE status = 'done'")" = 6 ] ||
  fail "not every run finished: $(DB=res-c/sweep.db sql "SELECT run_id, status, steps FROM runs")"
for variant in base wsd nodrop; do  # the crash resumed from the checkpoint: the results of the run without it
  a=$(losses res/sweep.db "$variant" 1) c=$(losses res-c/sweep.db "$variant" 1)
  [ -n "$a" ] && [ "$a" = "$c" ] || fail "$variant seed 1 after its parent's retry: $c, without the crash $a"
done
echo "branch: ok"
