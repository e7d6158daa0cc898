# scripts/test-gpu.sh, the GPU kit, end to end with the CPU standing in (--dry-run): its two calls
# run as a lent GPU machine would run them, on this build's binaries — facts, the binding check, the
# crash tests first and the GPU tests with JUnit output (skipped without a GPU), the bench a process
# per row with its rows appended as measured, and the Markdown table — everything under --out. A
# step over its limit is stopped and said; a failed row does not end the call.
kit=$(cd "$(dirname "$0")/../.." && pwd)/scripts/test-gpu.sh
source "$(dirname "$0")/lib.bash"
build=$(cd "$(dirname "$SWEEP")" && pwd)
[ -x "$build/sweep-core" ] && [ -x "$build/gpu_tests" ] || { echo "skipped: no training core or GPU tests in $build"; exit 77; }
"$kit" call1 --dry-run --build-dir "$build" --out out > call1.txt 2>&1 || fail "call1: $(tail -20 call1.txt)"
for f in call1.log facts.txt build.log bindings.log crashes.log gpu-tests.log junit.xml; do
  [ -s "out/$f" ] || fail "call1 wrote no out/$f: $(ls out)"
done
grep -q "nvidia-smi: none here (dry run: the CPU stands in)" out/facts.txt || fail "facts: $(head -3 out/facts.txt)"
grep -q "dry run: no build" out/build.log || fail "build: $(cat out/build.log)"
python3 - out/junit.xml <<'PY' || fail "junit.xml: $(head -c 600 out/junit.xml)"
import sys, xml.etree.ElementTree as ET
cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
names = [c.get("name") for c in cases]
assert len(names) >= 10 and all(n.startswith("gpu.") or "cuda" in n for n in names), names[:5]
assert not any("3 steps then a checkpoint" in n for n in names), "the crash tests ran twice"
PY
grep -q "gpu.unit.cuda: 3 steps then a checkpoint" out/crashes.log || fail "the crash tests did not run first: $(cat out/crashes.log)"
grep -q "== \[[0-9]*s\] call1: exit 0" out/call1.log || fail "call1's log: $(cat out/call1.log)"

"$kit" call2 --dry-run --build-dir "$build" --out out > call2.txt 2>&1 || fail "call2: $(tail -20 call2.txt)"
[ -s out/bench-reference.log ] && [ -s out/bench-fused.log ] || fail "a log per row: $(ls out)"
[ "$(wc -l < out/rows.jsonl)" = 2 ] || fail "rows.jsonl: $(cat out/rows.jsonl)"
grep -q "^| cpu | reference | fp32 | reference | " out/table.md && grep -q "^| cpu | reference | fp32 | fused | " out/table.md ||
  fail "table.md: $(cat out/table.md)"

# a row over its limit is stopped and said; the call goes on to the next row, then exits non-zero
mkdir slow && printf '#!/bin/sh\nexec sleep 60\n' > slow/sweep && chmod +x slow/sweep
code=0; TEST_GPU_MAX_LIMIT=2 "$kit" call2 --dry-run --build-dir slow --out slow-out > slow.txt 2>&1 || code=$?
[ "$code" -ne 0 ] || fail "call2 with rows over their limit exited 0: $(cat slow.txt)"
grep -q "test-gpu: bench-reference stopped at its limit of 2 s" slow-out/bench-reference.log &&
  grep -q "test-gpu: bench-fused stopped at its limit of 2 s" slow-out/bench-fused.log ||
  fail "a row over its limit: $(cat slow-out/*.log)"
grep -q "bench-table: .* has no row" slow.txt || fail "no rows, said: $(tail -5 slow.txt)"
echo "gpu_kit: ok"
