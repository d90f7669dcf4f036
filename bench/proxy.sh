#!/usr/bin/env bash
# `anvil sandbox --network proxy` (issue 8): a 100 MiB download through the proxy vs direct on
# loopback, and the set-up cost per connection (a 1-byte file fetched 50 times, one connection
# each, every round). curl's own timers (time_total) are used, so the sandbox's start-up is not
# counted.
# Prints medians and ratios; asserts nothing. Every round downloads the same file from the same
# origin (python3 -m http.server) with the same curl flags, once per kind, the order rotating:
#   direct   curl -> origin (one loopback TCP hop)
#   sandbox  curl in `anvil sandbox --network full` -> origin: the sandbox's own cost on curl
#            (seccomp, Landlock, namespaces), no proxy
#   floor    curl -> bench/splice_relay -> origin: the simplest user-space 2-hop relay (blocking
#            splice, a thread per direction, no policy, no sandbox): what ANY proxy gets here
#   socat    curl -> socat -> origin: an everyday copying relay, for scale
#   sockmap  curl -> bench/sockmap_relay -> origin: the same 2 hops relayed inside the kernel
#            (BPF sockmap redirect, no user-space copy or splice); only when KINDS names it
#            (needs root: CAP_BPF and CAP_NET_ADMIN)
#   proxy    curl in `anvil sandbox --network proxy` -> anvil-proxy -> origin
# With BASELINE_DIR (another build, e.g. of main) each round also runs the download through that
# build's proxy, so a before/after comparison shares the machine's load. With CHRT set (e.g.
# CHRT="chrt -f 10") the origin, the relays and every client run under it. As root (cgroup v1
# cpuacct writable), each download's CPU time is also measured, load-independent: the origin's,
# the relay's (splice_relay or socat) and the client's (curl, or the whole `anvil sandbox`:
# anvil, its init, anvil-proxy and curl), medians in ms per 100 MiB. KINDS="direct proxy ..."
# runs a subset (direct and proxy are always needed); FLOOR_PIPE_BYTES sets the floor relay's
# pipe size (default: the kernel's, 64 KiB).
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
relay_bin="$build/bench/splice_relay"
[[ -x "$relay_bin" ]] || { echo "proxy.sh: build $relay_bin first (target splice_relay)" >&2; exit 2; }
command -v socat >/dev/null || { echo "proxy.sh: needs socat (apt-get install socat)" >&2; exit 2; }
chrt_cmd=(${CHRT:-})
dir="$(mktemp -d /tmp/anvil-proxy-bench-XXXXXX)"
server="" relay="" socat_pid=""
cg=""
if [[ -w /sys/fs/cgroup/cpuacct ]]; then
  cg="/sys/fs/cgroup/cpuacct/anvil-proxy-bench-$$"
  mkdir -p "$cg/origin" "$cg/relay" "$cg/client"
fi
cleanup() {
  for p in $server $relay $socat_pid; do kill "$p" 2>/dev/null || true; done
  for p in $server $relay $socat_pid; do wait "$p" 2>/dev/null || true; done
  if [[ -n "$cg" ]]; then  # a group empties only once its last task is fully gone
    for _ in $(seq 50); do
      rmdir "$cg"/origin "$cg"/relay "$cg"/client "$cg" 2>/dev/null || true
      [[ -d "$cg" ]] || break
      sleep 0.1
    done
  fi
  rm -rf "$dir"
}
# in_cg NAME CMD...: execs CMD in the cpuacct group NAME (just CMD without cgroups). It replaces
# the calling shell, so it is only called in a subshell (`&` or `$(...)`).
in_cg() {
  local name="$1"; shift
  if [[ -n "$cg" ]]; then
    exec sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg/$name" "$@"
  else
    exec "$@"
  fi
}
cpu_ns() { if [[ -n "$cg" ]]; then cat "$cg/$1/cpuacct.usage"; else echo 0; fi; }
trap cleanup EXIT
head -c $((100 << 20)) /dev/zero > "$dir/big"
printf x > "$dir/small"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$dir" && in_cg origin "${chrt_cmd[@]}" python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
server=$!
in_cg relay "${chrt_cmd[@]}" "$relay_bin" "$port" "${FLOOR_PIPE_BYTES:-0}" > "$dir/relay_port" &
relay=$!
if [[ " ${KINDS:-} " == *" sockmap "* ]]; then
  [[ -x "$build/bench/sockmap_relay" ]] || { echo "proxy.sh: build $build/bench/sockmap_relay first" >&2; exit 2; }
  in_cg relay "${chrt_cmd[@]}" "$build/bench/sockmap_relay" "$port" > "$dir/sockmap_port" &
  relay="$relay $!"
  for _ in $(seq 50); do [[ -s "$dir/sockmap_port" ]] && break; sleep 0.1; done
  [[ -s "$dir/sockmap_port" ]] || { echo "proxy.sh: sockmap_relay did not start (root? BPF sockmap?)" >&2; exit 2; }
fi
socat_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
in_cg relay "${chrt_cmd[@]}" socat "TCP-LISTEN:$socat_port,bind=127.0.0.1,fork,reuseaddr" "TCP:127.0.0.1:$port" &
socat_pid=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/small" && break; sleep 0.1; done
url="http://127.0.0.1:$port"
for _ in $(seq 50); do [[ -s "$dir/relay_port" ]] && break; sleep 0.1; done
floor_url="http://127.0.0.1:$(cat "$dir/relay_port")"
socat_url="http://127.0.0.1:$socat_port"
for _ in $(seq 50); do curl -s -o /dev/null "$socat_url/small" && break; sleep 0.1; done
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
sandbox_of() { echo "${chrt_cmd[@]}" "$1/anvil" sandbox --network proxy --allow-host "127.0.0.1:$port" \
                 --unsafe-test-allow-address "127.0.0.1:$port" --; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
big() {  # big KIND: one 100 MiB download, prints seconds
  case "$1" in
    direct) in_cg client "${chrt_cmd[@]}" curl -s -o /dev/null -w '%{time_total}' "$url/big" ;;
    sandbox) in_cg client "${chrt_cmd[@]}" "$anvil" sandbox --network full -- \
               curl -s -o /dev/null -w '%{time_total}' "$url/big" ;;
    floor) in_cg client "${chrt_cmd[@]}" curl -s -o /dev/null -w '%{time_total}' "$floor_url/big" ;;
    socat) in_cg client "${chrt_cmd[@]}" curl -s -o /dev/null -w '%{time_total}' "$socat_url/big" ;;
    sockmap) in_cg client "${chrt_cmd[@]}" curl -s -o /dev/null -w '%{time_total}' \
               "http://127.0.0.1:$(cat "$dir/sockmap_port")/big" ;;
    proxy) in_cg client $(sandbox_of "$build") curl -s -o /dev/null -w '%{time_total}' "$url/big" ;;
    baseline) in_cg client $(sandbox_of "$baseline") curl -s -o /dev/null -w '%{time_total}' "$url/big" ;;
  esac
}
kinds=(${KINDS:-direct sandbox floor socat proxy ${baseline:+baseline}})  # KINDS: a subset
declare -A times=() cpu=()
for r in $(seq "$rounds"); do
  n=${#kinds[@]}
  for i in $(seq 0 $((n - 1))); do
    k=${kinds[$(((i + r) % n))]}
    o0=$(cpu_ns origin) r0=$(cpu_ns relay) c0=$(cpu_ns client)
    times[$k]+="$(big "$k") "
    o1=$(cpu_ns origin) r1=$(cpu_ns relay) c1=$(cpu_ns client)
    cpu[$k.origin]+="$(((o1 - o0) / 1000)) " cpu[$k.relay]+="$(((r1 - r0) / 1000)) "
    cpu[$k.client]+="$(((c1 - c0) / 1000)) " cpu[$k.total]+="$(((o1 - o0 + r1 - r0 + c1 - c0) / 1000)) "
  done
done
# Set-up: 50 one-byte fetches, one connection each, per client and round (medians), the clients
# in rotating order every round like the downloads; reported: the median over rounds.
small_urls=(); for _ in $(seq 50); do small_urls+=(-o /dev/null "$url/small"); done
small() {  # small KIND: median time_total of 50 new connections, seconds
  case "$1" in
    direct) "${chrt_cmd[@]}" curl -s -w '%{time_total}\n' "${small_urls[@]}" | median ;;
    proxy) $(sandbox_of "$build") curl -s -w '%{time_total}\n' "${small_urls[@]}" | median ;;
    baseline) $(sandbox_of "$baseline") curl -s -w '%{time_total}\n' "${small_urls[@]}" | median ;;
  esac
}
small_kinds=(direct proxy ${baseline:+baseline})
declare -A smalls=()
for r in $(seq "$rounds"); do
  n=${#small_kinds[@]}
  for i in $(seq 0 $((n - 1))); do
    k=${small_kinds[$(((i + r) % n))]}
    smalls[$k]+="$(small "$k") "
  done
done
direct_small=$(printf '%s\n' ${smalls[direct]} | median)
proxy_small=$(printf '%s\n' ${smalls[proxy]} | median)
base_small=0
if [[ -n "$baseline" ]]; then base_small=$(printf '%s\n' ${smalls[baseline]} | median); fi
medians=()
cpus=()
for k in "${kinds[@]}"; do
  medians+=("$k=$(printf '%s\n' ${times[$k]} | median)")
  for part in origin relay client total; do
    cpus+=("$k.$part=$(printf '%s\n' ${cpu[$k.$part]} | median)")
  done
done
echo "rounds: $rounds; load average before/after: $load_before / $(cut -d' ' -f1-3 /proc/loadavg)${CHRT:+; under $CHRT}"
python3 - "$direct_small" "$proxy_small" "$base_small" "${medians[@]}" "${cpus[@]}" <<'PY'
import sys
ds, ps, bs = map(float, sys.argv[1:4])
pairs = [a.split("=") for a in sys.argv[4:]]
med = {k: float(v) for k, v in pairs if "." not in k}
cpu = {k: float(v) / 1000 for k, v in pairs if "." in k}
mib = 100
label = {"direct": "direct (1 hop)", "sandbox": "sandbox --network full, direct",
         "floor": "floor: splice relay, 2 hops", "socat": "socat relay, 2 hops",
         "sockmap": "in-kernel relay (BPF sockmap)",
         "proxy": "anvil sandbox --network proxy", "baseline": "baseline build's proxy"}
have_cpu = any(cpu.values())
print(f"{'100 MiB download (median)':34} {'s':>8} {'MiB/s':>8} {'% direct':>9}"
      + ("   CPU ms: origin  relay client  total" if have_cpu else ""))
for k, v in med.items():
    print(f"{label[k]:34} {v:8.3f} {mib / v:8.0f} {med['direct'] / v * 100:8.0f}%"
          + ("".join(f" {cpu[k + '.' + p]:6.0f}" for p in ("origin", "relay", "client", "total"))
             if have_cpu else "").replace("  ", "  ", 1))
print(f"{'1-byte fetch, new connection, ms':34} direct {ds*1000:.3f}, proxy {ps*1000:.3f}"
      + (f", baseline {bs*1000:.3f}" if bs else ""))
print()
print(f"throughput through the proxy = {med['direct'] / med['proxy'] * 100:.0f}% of direct "
      "(target >= 70%)" + (f"; the floor relay gets {med['direct'] / med['floor'] * 100:.0f}%, "
      f"the proxy {med['floor'] / med['proxy'] * 100:.0f}% of the floor" if "floor" in med else ""))
print(f"set-up added per connection = {(ps-ds)*1000:.3f} ms (target <= 1 ms)")
if bs:
    print((f"baseline: {med['direct'] / med['baseline'] * 100:.0f}% of direct, "
           if "baseline" in med else "baseline: ") + f"set-up +{(bs-ds)*1000:.3f} ms")
PY
