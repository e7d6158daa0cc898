# Reports rendered from a fixed database are byte-identical to the committed ones
# (tests/data/golden/): every file `sweep report` writes and its table, for a sweep (a diverged
# variant, an effect below δ, the effects' tokens, FLOPs and time), a scale ladder and a tune axis (each arm at
# its own best lr, its response curves), and `sweep pool` over them. The guard of
# any change to report/ that means to change nothing: when a change means to change a report,
# render the expected files again with scripts/golden-report.sh and say why in the commit.
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
golden=${SWEEP_TEST_DATA:?}/golden
mkdir -p results
gunzip -c "$golden/fixture.sql.gz" | sqlite3 results/sweep.db || fail "cannot load the fixture database"
for sweep in golden golden-ladder golden-tuned; do
  "$SWEEP" report "$sweep" --out "out/$sweep" > "out-$sweep.txt" || fail "sweep report $sweep: $(cat "out-$sweep.txt")"
  mv "out-$sweep.txt" "out/$sweep/table.txt"
done
# sweep backtest over every ladder: the fixture's one; a sweep without a ladder is refused by name
"$SWEEP" backtest > backtest.txt || fail "sweep backtest: $(cat backtest.txt)"
grep -qE "^golden-ladder +large +2 " backtest.txt || fail "sweep backtest: $(cat backtest.txt)"
expect_rc 2 "$SWEEP" backtest golden 2> err.txt
grep -q "sweep golden has no scale ladder" err.txt || fail "backtest of a sweep without a ladder: $(cat err.txt)"
# sweep pool over every sweep: the ladder's rungs and the other sweeps as settings; named twice, once
mkdir -p out/pool
"$SWEEP" pool --format markdown > out/pool/pool.md || fail "sweep pool: $(cat out/pool/pool.md)"
"$SWEEP" pool golden-ladder golden-ladder --format json > out/pool/pool.json || fail "sweep pool --format json"
# copies of the study: the same per-seed results under other run ids (a key that does not change
# training) are one setting — an undecided arm never "holds" by being counted thrice —; near-copies
# 1e-5 apart are three settings whose prediction interval never collapses onto the mean
python3 "$golden/copies.py" out/golden/report.json copies || fail "copies.py"
(cd copies && "$SWEEP" pool ./same-a ./same-b ./same-c --format markdown > ../out/pool/identical.md &&
  "$SWEEP" pool ./near-a ./near-b ./near-c --format markdown > ../out/pool/near-copies.md) ||
  fail "sweep pool of copies: $(cat out/pool/identical.md out/pool/near-copies.md)"
"$SWEEP" pool --out pooled > /dev/null 2> pooled.txt || fail "sweep pool --out: $(cat pooled.txt)"
cmp pooled/pool.md out/pool/pool.md || fail "pool.md written by --out differs from --format markdown"
grep -q '<text>clip: pooled</text>' pooled/pool.svg || fail "pool.svg has no pooled row: $(head -c 300 pooled/pool.svg)"
# the same pool from the reports just written (their report.json, by path) as from the runs; a report and its
# runs, or a report named twice, pooled once; no results folder needed
"$SWEEP" pool golden golden-ladder golden-tuned --format json > from-runs.json || fail "sweep pool SWEEP..."
(mkdir -p elsewhere && cd elsewhere && "$SWEEP" pool ../out/golden ../out/golden-ladder/report.json ./../out/golden-tuned \
  --format json > ../from-reports.json) || fail "sweep pool REPORT...: $(cat from-reports.json)"
cmp from-runs.json from-reports.json || fail "pooled from reports differs from runs: $(diff from-runs.json from-reports.json)"
"$SWEEP" pool golden out/golden out/golden/report.json > twice.txt || fail "sweep pool golden out/golden"
grep -q "note: out/golden: the same runs as golden — pooled once" twice.txt || fail "report and runs: $(cat twice.txt)"
grep -q "note: out/golden/report.json: named twice — pooled once" twice.txt || fail "report twice: $(cat twice.txt)"
(cd out && expect_rc 2 "$SWEEP" pool golden 2> ../err.txt)
grep -q "to read the report in the folder golden, write ./golden" err.txt || fail "a report's folder as a word: $(cat err.txt)"
expect_rc 2 "$SWEEP" pool nosuch --out fresh-out 2> err.txt
[ ! -e fresh-out ] || fail "a refused sweep pool left its --out folder behind"
expect_rc 2 "$SWEEP" pool out/nosuch 2> err.txt
grep -q "^sweep: out/nosuch: no such report" err.txt || fail "sweep pool of a missing report: $(cat err.txt)"
echo '{"sweep": "x", ' > broken.json
expect_rc 2 "$SWEEP" pool broken.json 2> err.txt
grep -q "^sweep: broken.json: not JSON" err.txt || fail "sweep pool of a broken report: $(cat err.txt)"
expect_rc 2 "$SWEEP" pool out/golden --metric val_loss 2> err.txt
grep -q "compares the variants on test_loss, not val_loss — pool with --metric test_loss" err.txt ||
  fail "sweep pool of a report on another metric: $(cat err.txt)"
# sweep replay --eliminate: the same from the runs as from the reports; a rule that cannot be used refused
"$SWEEP" replay --eliminate golden golden-ladder golden-tuned > replay-runs.txt || fail "replay: $(cat replay-runs.txt)"
"$SWEEP" replay --eliminate out/golden out/golden-ladder out/golden-tuned > replay-reports.txt ||
  fail "replay REPORT...: $(cat replay-reports.txt)"
cmp replay-runs.txt replay-reports.txt || fail "replay from reports differs: $(diff replay-runs.txt replay-reports.txt)"
grep -q "^0 of 4 arms stopped" replay-runs.txt || fail "replay: $(cat replay-runs.txt)"
"$SWEEP" replay --eliminate golden golden-ladder golden-tuned --format json > replay.json || fail "replay --format json"
python3 -c "import json, sys; j = json.load(open('replay.json')); sys.exit(j['summary']['arms'] != 4)" ||
  fail "replay's JSON: $(head -c 600 replay.json)"
"$SWEEP" replay --eliminate golden out/golden > replay-twice.txt || fail "replay a study twice"
grep -q "^note: out/golden: the same runs as golden — replayed once" replay-twice.txt ||
  fail "replay of a study and its report: $(cat replay-twice.txt)"
expect_rc 2 "$SWEEP" replay golden 2> err.txt
grep -q "say which rule to replay — \-\-eliminate" err.txt || fail "replay without a rule: $(cat err.txt)"
expect_rc 2 "$SWEEP" replay --eliminate golden --looks 0.5,0.3 --kept 1,1 2> err.txt
grep -q "looks must be fractions of training between 0 and 1, ascending" err.txt || fail "replay --looks: $(cat err.txt)"
expect_rc 2 "$SWEEP" pool nosuch 2> err.txt
grep -q "nosuch" err.txt || fail "sweep pool of an unknown sweep: $(cat err.txt)"
# bad input, refused before any work and with nothing written: --out a file, a database with no sweep
touch not-a-folder
expect_rc 2 "$SWEEP" pool --out not-a-folder > out-file.txt 2> err.txt
grep -q "^sweep: --out not-a-folder: cannot be a folder to write into" err.txt || fail "pool --out FILE: $(cat err.txt)"
[ ! -s out-file.txt ] || fail "pool --out FILE printed the pool before refusing: $(head -c 300 out-file.txt)"
mkdir -p empty && cp results/sweep.db empty/ && sqlite3 empty/sweep.db "DELETE FROM sweep_runs; DELETE FROM variants; DELETE FROM sweeps;"
expect_rc 2 "$SWEEP" pool --results empty 2> err.txt
grep -q "no sweep in empty/sweep.db: nothing to pool" err.txt || fail "pool of an empty database: $(cat err.txt)"
diff -r "$golden/expected" out > diff.txt || fail "reports differ from tests/data/golden/expected: $(head -c 4000 diff.txt)"
echo "golden_report: ok ($(find out -type f | wc -l) files identical)"
