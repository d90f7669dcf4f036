#!/usr/bin/env bash
# `anvil sandbox --network proxy` (issue 8): a 100 MiB download through the proxy vs direct on
# loopback, and the set-up cost per connection (a 1-byte file fetched 50 times, one connection
# each). curl's own timers (time_total) are used, so the sandbox's start-up is not counted.
# Prints medians and ratios; asserts nothing.
#   bash bench/proxy.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/release}"
rounds="${2:-5}"
anvil="$build/anvil"
[[ -x "$anvil" && -x "$build/anvil-proxy" ]] || { echo "proxy.sh: build $build first" >&2; exit 2; }
dir="$(mktemp -d /tmp/anvil-proxy-bench-XXXXXX)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$dir"' EXIT
head -c $((100 << 20)) /dev/zero > "$dir/big"
printf x > "$dir/small"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$dir" && exec python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
server=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/small" && break; sleep 0.1; done
url="http://127.0.0.1:$port"
sandbox=("$anvil" sandbox --network proxy --allow-host "127.0.0.1:$port"
         --unsafe-test-allow-address "127.0.0.1:$port" --)
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
direct_big=(); proxy_big=()
for _ in $(seq "$rounds"); do
  direct_big+=("$(curl -s -o /dev/null -w '%{time_total}' "$url/big")")
  proxy_big+=("$("${sandbox[@]}" curl -s -o /dev/null -w '%{time_total}' "$url/big")")
done
small_urls=(); for _ in $(seq 50); do small_urls+=(-o /dev/null "$url/small"); done
direct_small=$(curl -s -w '%{time_total}\n' "${small_urls[@]}" | median)
proxy_small=$("${sandbox[@]}" curl -s -w '%{time_total}\n' "${small_urls[@]}" | median)
db=$(printf '%s\n' "${direct_big[@]}" | median)
pb=$(printf '%s\n' "${proxy_big[@]}" | median)
python3 - "$db" "$pb" "$direct_small" "$proxy_small" <<'PY'
import sys
db, pb, ds, ps = map(float, sys.argv[1:])
mib = 100
print(f"{'measure (median)':44} {'direct':>10} {'proxy':>10}")
print(f"{'100 MiB download, s':44} {db:10.3f} {pb:10.3f}")
print(f"{'100 MiB throughput, MiB/s':44} {mib/db:10.0f} {mib/pb:10.0f}")
print(f"{'1-byte fetch, new connection, ms':44} {ds*1000:10.3f} {ps*1000:10.3f}")
print()
print(f"throughput through the proxy = {db/pb*100:.0f}% of direct (target >= 70%)")
print(f"set-up added per connection = {(ps-ds)*1000:.3f} ms (target <= 1 ms)")
PY
