#!/bin/sh
# bench-banks.sh LABEL DATABASE_URL N: many banks in one database over the
# real API (docs/BENCHMARKS.md, "1 000 banks"). It serves memstream on
# DATABASE_URL (hash embeddings, 384 dims, consolidation off, embedded
# Kafka), creates N banks with PUT, retains one event synchronously in each
# of the first N/5 and recalls in them, and prints p50/p99/max client-side
# latency of each step and the count of non-2xx answers ("BAD"). Run it on
# an empty schema and on one that already holds many banks (for example
# the one `memstream bench recall --banks 1000 --keep` leaves, with
# search_path in the URL) and compare. MEMSTREAM_BIN picks the binary.
# Not part of `make test`.
set -e
label=$1; db=$2; n=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/memstream-bench-banks-XXXXXX")
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
kport=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"${MEMSTREAM_BIN:-memstream}" serve --set data_dir=$dir --set "database.url=$db" --set embed.provider=hash --set embed.dim=384 \
  --set consolidation.enabled=false --set http.addr=127.0.0.1:$port --set kafka.embedded_addr=127.0.0.1:$kport > $dir/serve.log 2>&1 &
pid=$!
trap 'kill $pid; wait $pid 2>/dev/null; rm -rf $dir' EXIT
base=http://127.0.0.1:$port/v1/default/banks
for i in $(seq 1 600); do curl -sf http://127.0.0.1:$port/v1/default/banks >/dev/null 2>&1 && break; sleep 0.5; done
total=$(curl -s http://127.0.0.1:$port/v1/default/banks | python3 -c 'import json,sys;d=json.load(sys.stdin);print(len(d.get("banks",d if isinstance(d,list) else [])))' || echo unknown)
echo "$label: banks listed before: $total"
stat() { awk -v l="$1" '{if ($1 !~ /^2/) bad++; print $2} END {print "BAD " bad+0 > "/dev/stderr"}' 2>>$dir/bad | sort -n | awk -v l="$1" '{a[NR]=$1} END {printf "%s: n=%d p50=%.1f ms p99=%.1f ms max=%.1f ms\n", l, NR, a[int(NR*0.5+0.5)]*1000, a[int(NR*0.99+0.5)]*1000, a[NR]*1000}'; tail -1 $dir/bad; }
for i in $(seq 1 $n); do
  curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -X PUT -H 'content-type: application/json' -d "{\"name\":\"tenant $i\"}" $base/$label-t$i
done | stat "$label create bank"
m=$((n/5))
for i in $(seq 1 $m); do
  curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -X POST -H 'content-type: application/json' \
    -d "{\"items\":[{\"content\":\"Tenant $i: Alice moved to Lisbon in March $i and now works at Acme as a nurse. Bob sold his bicycle.\"}],\"async\":false}" $base/$label-t$i/memories
done | stat "$label retain (sync, 1 event)"
for i in $(seq 1 $m); do
  curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -X POST -H 'content-type: application/json' -d '{"query":"Where does Alice work now?"}' $base/$label-t$i/memories/recall
done | stat "$label recall (new bank)"
curl -s -X POST -H 'content-type: application/json' -d '{"query":"Where does Alice work now?"}' $base/$label-t1/memories/recall | head -c 300; echo
