#!/usr/bin/env bash
# `sweep serve` over a real sweep's database: the routes answer, bad and hostile requests are
# refused with 4xx (path traversal, a bad parameter, a write, an oversized or malformed request)
# and the server lives on; the page in headless Chromium draws the database's curves, reacts to
# its controls and follows a `sweep run` that adds runs while it is open (serve_check.py); SIGTERM
# ends it with 0; bad input is a one-line error, exit 2.
source "$(dirname "$0")/lib.bash"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v chromium >/dev/null || fail "chromium is not installed (scripts/setup.sh --test installs it)"

prepare_bytes
tiny_sweep s.yaml live 30 "lr: {train.lr: 1e-3}"
sed -i 's/every: 20/every: 5/' s.yaml
"$SWEEP" run s.yaml --results res > run.txt || fail "sweep run: $(cat run.txt)"

"$SWEEP" serve --results res --port 0 > serve.txt 2> serve-err.txt &
server=$!
for _ in $(seq 100); do grep -q "http://" serve.txt && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' serve.txt) || fail "serve printed no address: $(cat serve.txt serve-err.txt)"
grep -q "read-only" serve.txt || fail "serve does not say it is read-only: $(cat serve.txt)"
[ ! -s serve-err.txt ] || fail "serve warned on localhost: $(cat serve-err.txt)"

status() { curl -s -o body.txt -w '%{http_code}' "$@"; }
expect() {  # expect CODE curl-args...
  local want=$1; shift
  local got; got=$(status "$@")
  [ "$got" = "$want" ] || fail "curl $(head -c 200 <<< "$*") answered $got, expected $want: $(head -c 300 body.txt)"
}
expect 200 "${url}"
grep -q 'src="/assets/app.js"' body.txt || fail "the page is not the app: $(head -c 300 body.txt)"
expect 200 -I "${url}sweeps/live"
grep -qi "content-security-policy: default-src 'none'" body.txt || fail "no content security policy: $(cat body.txt)"
expect 200 "${url}assets/uPlot.iife.min.js"
expect 200 "${url}assets/uPlot.LICENSE"
grep -q "MIT" body.txt || fail "uPlot's licence is not served"
expect 200 "${url}api/sweeps"
grep -q '"name":"live"' body.txt || fail "/api/sweeps: $(head -c 300 body.txt)"
expect 200 "${url}api/sweeps/live"
expect 200 "${url}api/pool"
grep -q '"settings":\["live"\]' body.txt || fail "/api/pool: $(head -c 300 body.txt)"
expect 200 "${url}api/sweeps/live/curves?metric=grad_norm&px=50&seeds=1&smooth=0.5"
run=$(sql "SELECT run_id FROM runs LIMIT 1")
expect 200 "${url}api/runs/$run"
grep -q '"config":"' body.txt || fail "/api/runs: $(head -c 300 body.txt)"

# Refused: unknown names, traversal, bad parameters, writes, oversized and malformed requests.
expect 404 "${url}api/sweeps/nope"
grep -q "no sweep named 'nope'" body.txt || fail "404 without a message: $(cat body.txt)"
expect 404 "${url}api/runs/nope"
expect 404 "${url}nope"
expect 404 --path-as-is "${url}assets/../sweep.db"
expect 404 --path-as-is "${url}assets/%2e%2e%2fsweep.db"
expect 404 --path-as-is "${url}assets/..%2F..%2F..%2Fetc%2Fpasswd"
grep -q "SQLite\|root:" body.txt && fail "a traversal read a file"
expect 400 "${url}api/sweeps/live/curves?metric=loss%27%3B"
expect 400 "${url}api/sweeps/live/curves?px=abc"
expect 400 "${url}api/sweeps/live/curves?px=1e9"
expect 400 "${url}api/sweeps/live/curves?smooth=nan"
expect 405 -X POST -d x=1 "${url}api/sweeps"
expect 405 -X DELETE "${url}api/runs/$run"
head -c 3000000 /dev/zero > big.bin
expect 405 -H "Transfer-Encoding: chunked" --data-binary @big.bin "${url}api/sweeps"  # refused before its body is read
expect 416 -H "Range: bytes=0-,0-,0-" "${url}api/sweeps"
expect 403 -H "Host: evil.example" "${url}api/sweeps"  # DNS rebinding: not addressed to this machine
expect 414 "${url}api/sweeps/$(head -c 20000 /dev/zero | tr '\0' a)"
expect 400 -H "X-Big: $(head -c 20000 /dev/zero | tr '\0' a)" "${url}api/sweeps"
port=${url##*:}; port=${port%/}
/usr/bin/python3 - "$port" > malformed.txt <<'PY' || fail "malformed requests: $(cat malformed.txt)"
import socket, sys
for raw in (b"GARBAGE\r\n\r\n", b"GET\r\n\r\n", b"\x00\xff\xfe\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
            b"GET /\x00 HTTP/1.1\r\n\r\n", b"POST /api/sweeps HTTP/1.1\r\nContent-Length: 5000\r\n\r\n" + b"a" * 5000):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
    s.sendall(raw)
    reply = s.recv(200)
    s.close()
    assert reply.startswith(b"HTTP/1.1 4"), (raw, reply)
print("ok")
PY
kill -0 $server 2>/dev/null || fail "the server died of the requests above"
# a name of invalid UTF-8 in the URL: the 404's JSON is valid UTF-8 (the bytes replaced)
curl -s "${url}api/sweeps/%FF%FEx" > bad-utf8.json
/usr/bin/python3 -c "import json, sys; e = json.loads(open('bad-utf8.json', 'rb').read().decode('utf-8'))['error']; assert '\ufffd' in e, e" ||
  fail "a 404 of a name in invalid UTF-8: $(od -c bad-utf8.json | head -3)"
# 64 idle connections (opened, no request sent) do not stall the others: once 37 s here
/usr/bin/python3 - "$port" "${url}api/version" > idle.txt <<'PY' || fail "idle connections stall the server: $(cat idle.txt)"
import socket, sys, time, urllib.request
idle = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(64)]
t0 = time.monotonic()
with urllib.request.urlopen(sys.argv[2], timeout=30) as r:
    assert r.status == 200
waited = time.monotonic() - t0
print(f"/api/version beside 64 idle connections: {waited:.3f} s")
assert waited < 1.5, waited  # a thread each: no wait for an idle one's read timeout (2 s)
for s in idle:
    s.close()
PY
# two requests pipelined on one socket: the first answered with "Connection: close" and the socket
# closed at once (the client sends the second again), never left waiting for an answer that never comes
/usr/bin/python3 - "$port" > pipelined.txt <<'PY' || fail "pipelined requests: $(cat pipelined.txt)"
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
request = b"GET /api/version HTTP/1.1\r\nHost: localhost\r\n\r\n"
s.sendall(request + request)
s.settimeout(30)
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break  # closed by the server: a client's cue to send the rest again
    data += chunk
head = data.split(b"\r\n\r\n")[0].lower()
assert data.count(b"HTTP/1.1 ") == 1 and b"connection: close" in head, data[:300]
print("pipelined: one answer, Connection: close")
PY
[ "$(sql 'PRAGMA integrity_check')" = ok ] || fail "the database is damaged"

# The page in a real browser, live while another variant trains.
sed -i 's/^  lr: {train.lr: 1e-3}/&\n  clip: {train.grad_clip: 0.5}/' s.yaml  # the sweep file edited
# a log line with markup: shown as text on the run's page, never run
echo '<img src=x onerror="document.title=1"><script>document.title=2</script>' >> "res/runs/$run/worker.log"
python3 "$here/serve_check.py" "$url" live "$PWD/res/sweep.db" shot "$run" -- "$SWEEP" run s.yaml --results res ||
  fail "the browser check failed"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'done'")" = 6 ] || fail "the sweep beside the server did not finish"
kill -TERM $server
wait $server || fail "serve exited $? on SIGTERM"

# Bad input: one line, exit 2.
expect_rc 2 "$SWEEP" serve --results nowhere 2> err.txt
[ "$(wc -l < err.txt)" -eq 1 ] && grep -q "no database at nowhere/sweep.db" err.txt || fail "no database: $(cat err.txt)"
mkdir -p emptydb && : > emptydb/sweep.db  # an empty file: refused, and left empty
expect_rc 2 "$SWEEP" serve --results emptydb 2> err.txt
grep -q "emptydb/sweep.db is empty (0 bytes)" err.txt && [ ! -s emptydb/sweep.db ] || fail "serve on an empty database: $(cat err.txt)"
"$SWEEP" serve --results res --port 0 > first.txt &
first=$!
for _ in $(seq 100); do grep -q "http://" first.txt && break; sleep 0.1; done
taken=$(grep -o 'http://[^ ]*' first.txt); taken=${taken##*:}; taken=${taken%/}
expect_rc 2 "$SWEEP" serve --results res --port "$taken" 2> err.txt
grep -q "cannot listen on 127.0.0.1:$taken" err.txt || fail "a taken port: $(cat err.txt)"
kill -TERM $first; wait $first
"$SWEEP" serve --results res --host 0.0.0.0 --port 0 > open.txt 2> warn.txt &
open=$!
for _ in $(seq 100); do grep -q "http://" open.txt && break; sleep 0.1; done
grep -q "anyone who can reach this port can read every result" warn.txt || fail "no warning off localhost: $(cat warn.txt)"
kill -TERM $open; wait $open
echo "ok"
