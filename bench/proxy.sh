#!/usr/bin/env bash
# `anvil sandbox --network proxy` (issue 8): a 100 MiB download through the proxy vs direct on
# loopback, and the set-up cost per connection (a 1-byte file fetched 50 times, one connection
# each). curl's own timers (time_total) are used, so the sandbox's start-up is not counted.
# Prints medians and ratios; asserts nothing. With BASELINE_DIR (another build, e.g. of main),
# each round also runs the same download through that build's proxy, interleaved with the
# others (the order rotates every round), so a before/after comparison shares the machine's load.
#   bash bench/proxy.sh [BUILD_DIR] [ROUNDS] [BASELINE_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/release}"
rounds="${2:-5}"
baseline="${3:-}"
anvil="$build/anvil"
for b in "$build" ${baseline:+"$baseline"}; do
  [[ -x "$b/anvil" && -x "$b/anvil-proxy" ]] || { echo "proxy.sh: build $b first" >&2; exit 2; }
done
dir="$(mktemp -d /tmp/anvil-proxy-bench-XXXXXX)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$dir"' EXIT
head -c $((100 << 20)) /dev/zero > "$dir/big"
printf x > "$dir/small"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$dir" && exec python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
server=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/small" && break; sleep 0.1; done
url="http://127.0.0.1:$port"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
sandbox_of() { echo "$1/anvil" sandbox --network proxy --allow-host "127.0.0.1:$port" \
                 --unsafe-test-allow-address "127.0.0.1:$port" --; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
big() {  # big KIND: one 100 MiB download, prints seconds
  case "$1" in
    direct) curl -s -o /dev/null -w '%{time_total}' "$url/big" ;;
    proxy) $(sandbox_of "$build") curl -s -o /dev/null -w '%{time_total}' "$url/big" ;;
    baseline) $(sandbox_of "$baseline") curl -s -o /dev/null -w '%{time_total}' "$url/big" ;;
  esac
}
kinds=(direct proxy ${baseline:+baseline})
declare -A times=()
for r in $(seq "$rounds"); do
  n=${#kinds[@]}
  for i in $(seq 0 $((n - 1))); do
    k=${kinds[$(((i + r) % n))]}
    times[$k]+="$(big "$k") "
  done
done
small_urls=(); for _ in $(seq 50); do small_urls+=(-o /dev/null "$url/small"); done
direct_small=$(curl -s -w '%{time_total}\n' "${small_urls[@]}" | median)
proxy_small=$($(sandbox_of "$build") curl -s -w '%{time_total}\n' "${small_urls[@]}" | median)
base_small=0 base_big=0
if [[ -n "$baseline" ]]; then
  base_small=$($(sandbox_of "$baseline") curl -s -w '%{time_total}\n' "${small_urls[@]}" | median)
  base_big=$(printf '%s\n' ${times[baseline]} | median)
fi
db=$(printf '%s\n' ${times[direct]} | median)
pb=$(printf '%s\n' ${times[proxy]} | median)
echo "rounds: $rounds; load average before/after: $load_before / $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$db" "$pb" "$direct_small" "$proxy_small" "$base_big" "$base_small" <<'PY'
import sys
db, pb, ds, ps, bb, bs = map(float, sys.argv[1:])
mib = 100
cols = ["direct", "proxy"] + (["baseline"] if bb else [])
print(f"{'measure (median)':36} " + " ".join(f"{c:>10}" for c in cols))
def row(name, vals):
    print(f"{name:36} " + " ".join(f"{v:10.3f}" if isinstance(v, float) else f"{v:>10}" for v in vals))
row("100 MiB download, s", [db, pb] + ([bb] if bb else []))
row("100 MiB throughput, MiB/s", [f"{mib/db:.0f}", f"{mib/pb:.0f}"] + ([f"{mib/bb:.0f}"] if bb else []))
row("1-byte fetch, new connection, ms", [ds*1000, ps*1000] + ([bs*1000] if bb else []))
print()
print(f"throughput through the proxy = {db/pb*100:.0f}% of direct (target >= 70%)")
print(f"set-up added per connection = {(ps-ds)*1000:.3f} ms (target <= 1 ms)")
if bb:
    print(f"baseline: {db/bb*100:.0f}% of direct, set-up +{(bs-ds)*1000:.3f} ms")
PY
