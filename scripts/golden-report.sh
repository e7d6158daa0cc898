#!/usr/bin/env bash
# Renders tests/data/golden/expected again from the fixture database with ./build/sweep — for a
# change that means to change what a report says (integration.golden_report then compares against
# the new files). Run from the repository root after building; review `git diff` of the result.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sweep=${SWEEP:-$root/build/sweep}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/results"
gunzip -c "$root/tests/data/golden/fixture.sql.gz" | sqlite3 "$work/results/sweep.db"
for name in golden golden-ladder golden-tuned; do
  (cd "$work" && "$sweep" report "$name" --out "out/$name" > "out-$name.txt" && mv "out-$name.txt" "out/$name/table.txt")
done
mkdir -p "$work/out/pool"
(cd "$work" && "$sweep" pool --format markdown > out/pool/pool.md && "$sweep" pool golden-ladder golden-ladder --format json > out/pool/pool.json)
# copies of the golden study (tests/data/golden/copies.py): the same per-seed results under other run
# ids are one setting; near-copies 1e-5 apart are three whose prediction interval must not collapse
python3 "$root/tests/data/golden/copies.py" "$work/out/golden/report.json" "$work/copies"
(cd "$work/copies" && "$sweep" pool ./same-a ./same-b ./same-c --format markdown > ../out/pool/identical.md &&
  "$sweep" pool ./near-a ./near-b ./near-c --format markdown > ../out/pool/near-copies.md)
rm -rf "$root/tests/data/golden/expected"
cp -r "$work/out" "$root/tests/data/golden/expected"
echo "wrote tests/data/golden/expected ($(find "$root/tests/data/golden/expected" -type f | wc -l) files)"
