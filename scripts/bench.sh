#!/usr/bin/env bash
# kintfs benchmarks (make bench): the same work on a kintfs dev mount and on the same tree in a
# native directory, side by side in one run, with ratios (mount / native) and absolute medians,
# written to docs/benchmarks.md.
#
# What runs: a development chain (`kintfs devchain`, its own process, so that the mount's RSS
# and CPU profile are the mount's alone) and `kintfs mount --dev` on a fresh KINT_HOME under
# $BENCH_WORK, which is removed at the end (KEEP=1 keeps it). Background flushes are off
# (KINT_QUIET_SECONDS and KINT_SIZE_TRIGGER_BYTES are set out of reach): every flush is an
# explicit `echo flush > .kint/ctl`, so it is measured, and never lands inside another test.
#
# Sizes (environment; QUICK=1 makes them all small, for a run of a couple of minutes):
#   ROWS=10000 CATS=100 ROW_BYTES=1024   the tree for grep, find, ls -lR and the flush
#   CP_FILES=1000                        files of ROW_BYTES copied by cp -r
#   VERSIONS=1000                        versions of the history row (one flush each)
#   HIST_READS=50 HIST_CAT_READS=10      reads at arbitrary blocks (in-process; cats per run)
#   PULL_EPOCHS=500                      epochs of the vault when the cold pull runs
#   RSS_ROWS=100000 RSS_FLUSH_EVERY=10000  rows of the peak-RSS mount, flushed in batches
#   RUNS=10 WARMUP=2 CP_RUNS=5 COLD_RUNS=3   hyperfine runs; cold passes (one mount each)
#   HIST_MAX_SECONDS=1500 RSS_MAX_SECONDS=1500   bounds of the two slow population steps
# Other knobs: OUT=docs/benchmarks.md (QUICK: bench-work/benchmarks-quick.md), BENCH_WORK,
# SKIP="warm ro cp flush hist pull backfill cold noxattr rss gas" (any subset), PROFILE=1 (each mount
# writes a CPU profile, KINTFS_CPUPROFILE, kept in the results directory), KEEP=1,
# REPORT_FROM=bench-work/run-.../results (only render that run's results again, to OUT).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

QUICK=${QUICK:-0}
if [[ $QUICK == 1 ]]; then
	: "${ROWS:=1000}" "${CATS:=10}" "${CP_FILES:=200}" "${VERSIONS:=20}" "${HIST_READS:=20}"
	: "${PULL_EPOCHS:=20}" "${RSS_ROWS:=2000}" "${RSS_FLUSH_EVERY:=1000}" "${RUNS:=3}" "${WARMUP:=1}"
	: "${CP_RUNS:=3}" "${COLD_RUNS:=1}" "${OUT:=bench-work/benchmarks-quick.md}"
fi
: "${ROWS:=10000}" "${CATS:=100}" "${ROW_BYTES:=1024}" "${CP_FILES:=1000}" "${VERSIONS:=1000}"
: "${HIST_READS:=50}" "${HIST_CAT_READS:=10}" "${PULL_EPOCHS:=500}" "${RSS_ROWS:=100000}" "${RSS_FLUSH_EVERY:=10000}"
: "${RUNS:=10}" "${WARMUP:=2}" "${CP_RUNS:=5}" "${COLD_RUNS:=3}" "${HIST_MAX_SECONDS:=1500}"
: "${RSS_MAX_SECONDS:=1500}" "${OUT:=docs/benchmarks.md}" "${BENCH_WORK:=$ROOT/bench-work}"
: "${SKIP:=}" "${PROFILE:=0}" "${KEEP:=0}"
SAMPLER_PID=""
KEYS=$((ROWS / CATS))
ROWS=$((KEYS * CATS))

say() { printf '\n== %s\n' "$*" >&2; }
note() { printf '   %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
skipped() { [[ " $SKIP " == *" $1 "* ]]; }
now() { printf '%s' "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.3f", b-a}'; }

# render_report RESULTS OUT: the markdown of one run, from its results directory.
render_report() {
	python3 - "$1" "$2" <<'EOF'
import json, os, statistics, sys
res, out = sys.argv[1], sys.argv[2]
def load(name):
    p = os.path.join(res, name)
    return json.load(open(p)) if os.path.exists(p) else None
P = load("params.json")
def hfres(name):
    d = load("hf-%s.json" % name)
    return d["results"] if d else None
def fmt_s(x):
    return "%.0f µs" % (x * 1e6) if x < 1e-3 else ("%.1f ms" % (x * 1e3) if x < 1 else "%.2f s" % x)

rows, verdicts = [], []
def add(what, mount, native, ratio, target=None):
    verdict = ""
    if target is not None and ratio is not None:
        verdict = "met" if ratio <= target else "**missed**"
        verdicts.append((what, verdict, "%.2fx" % ratio, "<= %gx" % target))
    rows.append((what, mount, native, "%.2fx" % ratio if ratio is not None else "", "<= %gx" % target if target else "", verdict))
def hf_row(what, name, target=None):
    r = hfres(name)
    if r:
        add(what, fmt_s(r[0]["median"]), fmt_s(r[1]["median"]), r[0]["median"] / r[1]["median"], target)

size = "%d rows of ~%d B" % (P["rows"], P["row_bytes"])
hf_row("`grep -r` (%s), warm" % size, "grep-warm", 2)
hf_row("`grep -r`, warm, `--read-only` mount", "grep-warm-ro", 1.5)
cold = os.path.join(res, "cold.txt")
if os.path.exists(cold):
    m = [float(l.split()[1]) for l in open(cold) if l.startswith("mount")]
    n = [float(l.split()[1]) for l in open(cold) if l.startswith("native")]
    if m and n:
        add("`grep -r`, cold: first pass after a fresh mount vs native after drop_caches (%d passes)" % len(m),
            fmt_s(statistics.median(m)), fmt_s(statistics.median(n)), statistics.median(m) / statistics.median(n), 1.5)
hf_row("`find MNT -type f | wc -l`, warm", "find-warm", 3)
hf_row("`ls -lR`, warm, xattrs on (the default)", "lslR-xattrs", 3)
hf_row("`ls -lR`, warm, `--xattrs=false`", "lslR-noxattrs", 1.5)
cp = hfres("cp")
if cp:
    add("`cp -r` of %d files of ~%d B into the mount (durable on close) vs native with fsync per file" % (P["cp_files"], P["row_bytes"]),
        fmt_s(cp[0]["median"]), fmt_s(cp[1]["median"]), cp[0]["median"] / cp[1]["median"], 1.5)
    add("same, vs native `cp -r` without fsync (reference only)", fmt_s(cp[0]["median"]), fmt_s(cp[2]["median"]), cp[0]["median"] / cp[2]["median"])
rh = load("readhist.json")
hc = hfres("hist-cat")
if hc:
    add("`cat` one row at %d random `@<block>`s (%d versions) vs `cat` its current version as often" % (P.get("hist_cat_reads", 20), rh["versions"] if rh else 0),
        fmt_s(hc[0]["median"]), fmt_s(hc[1]["median"]) + " (current)", hc[0]["median"] / hc[1]["median"], 2)
if rh:
    add("one read (open, read, close) at an arbitrary `@<block>`, in-process, median of %d (each a new block) vs the current version" % rh["reads"],
        "%.0f µs" % rh["history_median_us"], "%.0f µs (current)" % rh["current_median_us"],
        rh["history_median_us"] / rh["current_median_us"], 2)
    add("the same read again at an `@<block>` already looked up vs current", "%.0f µs" % rh["history_same_block_median_us"],
        "%.0f µs (current)" % rh["current_median_us"], rh["history_same_block_median_us"] / rh["current_median_us"])

L = []
w = L.append
w("# kintfs benchmarks")
w("")
w("Produced by `make bench` (`scripts/bench.sh`%s). Each comparison runs in one invocation: the same work on a"
  " kintfs dev mount and on the same tree in a native directory on the same disk, side by side. Times are medians"
  " (hyperfine, `--warmup %d --runs %d`, for the warm cases; `--runs %d` for cp; 5 runs for the `cat` at random blocks)."
  % (", **QUICK=1: small sizes, not the reference numbers**" if P["quick"] else "", P["warmup"], P["runs"], P["cp_runs"]))
w("")
w("## Machine")
w("")
loads = [float(l.split()[1]) for l in open(os.path.join(res, "load.txt"))] if os.path.exists(os.path.join(res, "load.txt")) else []
w("- date: %s (UTC), run took %s" % (P["started"], ("%.0f min" % (P["seconds"] / 60)) if P.get("seconds") else "?"))
w("- nproc: %s; CPU: %s; memory: %s" % (P["nproc"], P["cpu"], P["memory"]))
w("- kernel: %s; native tree and KINT_HOME on %s" % (P["kernel"], P["fstype"]))
w("- kintfs %s; %s; %s" % (P["commit"], P["go"], P["hyperfine"]))
if loads:
    w("- load average (1 min) during the run: min %.1f, median %.1f, max %.1f (sampled every 10 s). Other jobs shared"
      " the %s cores: numbers above 1 per core mean noise, which hits the mount (several processes per operation) more"
      " than native" % (min(loads), statistics.median(loads), max(loads), P["nproc"]))
w("- dev chain: `kintfs devchain` in its own process (the mount's RSS and profile are its own); KINT_CONFIRMATIONS=1;"
  " flushes only through `.kint/ctl` (quiet and size triggers set out of reach)")
w("- cold runs: %s" % ("page cache dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) before each pass" if P["can_drop"] else "page cache could NOT be dropped (not permitted): cold = fresh mount only"))
w("")
w("## Mount vs native")
w("")
w("| measurement | mount | native | ratio | target | |")
w("|---|---|---|---|---|---|")
def cell(x):
    return str(x).replace("|", "\\|")
for r in rows:
    w("| " + " | ".join(cell(c) for c in r) + " |")
w("")
w("## Vault operations")
w("")
w("| measurement | result |")
w("|---|---|")
ms = os.path.join(res, "mount-starts.txt")
if os.path.exists(ms):
    st = [l.split() for l in open(ms)]
    w("| mount start-up (`kintfs mount --dev` until `.kint/status` answers), %d starts | %s |" % (len(st), ", ".join("%s %.1f s" % (a, float(b)) for a, b in st)))
pop, fn = load("populate.json"), load("flush-new.json")
if pop:
    per = 1000 * pop["seconds"] / max(pop["files"], 1)
    verdict = "met" if per <= 0.3 else "**missed**"
    verdicts.append(("writing %d new rows through the mount (a copy; each close durable), per file" % pop["files"], verdict, "%.2f ms" % per, "<= 0.3 ms"))
    w("| **write %d new rows through the mount** (a copy; each close durable; target <= 0.3 ms per file: %s) | %.1f s, %.2f ms per file |" % (pop["files"], verdict.replace("*", ""), pop["seconds"], per))
if pop and fn:
    w("| flush %d new rows | %.1f s: %d epochs, %d calldata bytes, %d gas |" % (fn["rows"], fn["seconds"], fn["epochs"], fn["calldata_bytes"], fn["gas_used"]))
rw, fc = load("rewrite.json"), load("flush-changed.json")
if rw and fc:
    verdict = "met" if fc["seconds"] <= 2 else "**missed**"
    verdicts.append(("flush of %d changed rows (%d epochs, dev chain; the chain's own time not subtracted)" % (fc["rows"], fc["epochs"]), verdict, "%.1f s" % fc["seconds"], "<= 2 s"))
    w("| rewrite the %d rows through the mount | %.1f s |" % (rw["files"], rw["seconds"]))
    w("| **flush %d changed rows** | **%.1f s: %d epochs, %d calldata bytes** (%.0f per row), %d gas |"
      % (fc["rows"], fc["seconds"], fc["epochs"], fc["calldata_bytes"], fc["calldata_bytes"] / max(fc["rows"], 1), fc["gas_used"]))
hw = load("hist-write.json")
if hw:
    w("| write + flush one row, %d times (its history) | %.0f s, %.0f ms per write + flush |" % (hw["versions"], hw["seconds"], 1000 * hw["seconds"] / max(hw["versions"], 1)))
for name, what in (("pull-cold", "**cold pull** into a fresh KINT_HOME"),
                   ("pull-again", "**warm pull**: second pull, same home, nothing new"),
                   ("pull-full-cached", "`pull --full` on that home (walks every epoch again)"),
                   ("pull-primed", "fresh replica whose epoch cache is already there (a copy of the first's)")):
    p = load(name + ".json")
    if p:
        per = p["rpc_calls"] / p["epochs"] if p["epochs"] else 0
        meth = ", ".join("%s %d" % kv for kv in sorted(p["methods"].items(), key=lambda kv: -kv[1]))
        w("| %s, %d-epoch vault | %.2f s; applied %d, fetched %d, from_cache %d; %d RPC calls = %.2f per epoch, in %d HTTP requests (%s)%s |"
          % (what, p["epochs"], p["seconds"], p["applied"], p["fetched"], p["from_cache"], p["rpc_calls"], per, p["http_requests"], meth,
             "; it said: " + cell(p["note"]) if p.get("note") else ""))
rss = load("rss.json")
if rss:
    peak = rss.get("hwm_final_kb", rss["hwm_after_walk_kb"]) / 1024
    verdict = "met" if peak <= 150 else "**missed**"
    verdicts.append(("peak RSS (VmHWM) of a mount holding %d rows (mounted, every file read, a batch written and flushed)" % rss["rows"], verdict, "%.0f MB" % peak, "<= 150 MB"))
    w("| populate %d rows through the mount, flush every %d%s | %.0f s (writing %.0f s; %d flushes %.0f s) |"
      % (rss["rows"], P["rss_flush_every"], " (**stopped by the time bound**)" if rss["stopped_by_time_bound"] else "",
         rss["populate_seconds"], rss["write_seconds"], rss["flushes"], rss["flush_seconds"]))
    w("| **peak RSS (VmHWM) of a mount holding %d rows** (target <= 150 MB: %s): a fresh mount of them, then `find` + `grep -r` + `ls -lR` over all %d files (%.1f s), then %d rows rewritten and flushed (%.1f s) | %.0f MB right after mounting; %.0f MB after reading every file (VmRSS %.0f MB); **%.0f MB** after the flush (VmRSS %.0f MB) |"
      % (rss["rows"], verdict.replace("*", ""), rss["files_seen"], rss["walk_seconds"], rss.get("batch_rows", 0), rss.get("batch_flush_seconds", 0),
         rss["hwm_fresh_mount_kb"] / 1024, rss["hwm_after_walk_kb"] / 1024, rss["rss_after_walk_kb"] / 1024, rss.get("hwm_final_kb", 0) / 1024, rss.get("rss_final_kb", 0) / 1024))
    w("| the mount process that created that vault and populated it | VmHWM %.0f MB with the vault still empty; %.0f MB after populating and flushing (VmRSS %.0f MB) |"
      % (rss.get("hwm_empty_kb", 0) / 1024, rss["hwm_populate_kb"] / 1024, rss["rss_after_populate_kb"] / 1024))
bf = load("backfill.json")
if bf:
    verdict = "met" if bf["rpc_per_epoch"] <= 2 else "**missed**"
    verdicts.append(("RPC calls per epoch of a history backfill (%d epochs under a snapshot)" % bf["epochs"], verdict, "%.2f" % bf["rpc_per_epoch"], "<= 2"))
    w("| **backfill** of the history of %d epochs under a snapshot, on a fresh machine (in-process dev chain) | %.0f epochs per second, %.2f RPC calls per epoch |"
      % (bf["epochs"], bf["epochs_per_second"], bf["rpc_per_epoch"]))
g = load("gas.json")
if g:
    verdict = "met" if g["at_floor"] == g["pushes"] else "**missed**"
    verdicts.append(("gas_used / EIP-7623 floor over %d pushes after the first" % g["pushes"], verdict, "max %.4f" % g["ratio_max"], "1.000"))
    w("| **gas_used / EIP-7623 floor** 21000 + 10 x (zeros + 4 x nonzeros) of the calldata, %d pushes after the first (expected 1.000) | min %.4f, median %.4f, max %.4f; %d of %d exactly at the floor |"
      % (g["pushes"], g["ratio_min"], g["ratio_median"], g["ratio_max"], g["at_floor"], g["pushes"]))
    for o in (g.get("worst_off_floor") or [])[:3]:
        w("| &nbsp;&nbsp;off the floor: seq %d | %d calldata bytes, gas %d vs floor %d (%.4f) |" % (o["seq"], o["calldata_bytes"], o["gas_used"], o["floor"], o["ratio"]))
w("")
w("## Targets")
w("")
w("| target | measured | | |")
w("|---|---|---|---|")
for what, verdict, val, target in verdicts:
    w("| %s | %s | %s | %s |" % (cell(what), val, target, verdict))
w("")
w("Sizes: ROWS=%(rows)d CATS=%(cats)d ROW_BYTES=%(row_bytes)d CP_FILES=%(cp_files)d VERSIONS=%(versions)d"
  " PULL_EPOCHS=%(pull_epochs)d RSS_ROWS=%(rss_rows)d RUNS=%(runs)d COLD_RUNS=%(cold_runs)d. Reproduce with"
  " `make bench` (QUICK=1 for a small run of a few minutes; the variables above override the sizes)." % P)
open(out, "w").write("\n".join(L) + "\n")
print("\n".join(L))
EOF
}

if [[ -n ${REPORT_FROM:-} ]]; then
	render_report "$REPORT_FROM" "$OUT"
	exit 0
fi

# --- tools -------------------------------------------------------------------------------------
command -v fusermount3 >/dev/null && [[ -e /dev/fuse ]] || die "FUSE is not available (need /dev/fuse and fusermount3: apt-get install -y fuse3)"
if ! command -v hyperfine >/dev/null; then
	say "installing hyperfine"
	apt-get install -y hyperfine >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y hyperfine >/dev/null; }
fi
command -v python3 >/dev/null || die "python3 is needed"
command -v curl >/dev/null || die "curl is needed"

CAN_DROP=0
if (sync && echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then CAN_DROP=1; fi
drop_caches() { sync; if [[ $CAN_DROP == 1 ]]; then echo 3 >/proc/sys/vm/drop_caches; fi; }

STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
WORK="$BENCH_WORK/run-$(date +%Y%m%d-%H%M%S)-$$"
RES="$WORK/results"
mkdir -p "$RES"
BIN="$WORK/kintfs"
BT="$WORK/benchtool"
say "building kintfs and benchtool into $WORK"
go build -o "$BIN" ./cmd/kintfs
go build -o "$BT" ./scripts/benchtool
RUN_T0=$SECONDS
python3 - "$RES/params.json" <<EOF
import json, sys
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mem = int(next((l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")), "0"))
json.dump({"quick": $QUICK == 1, "rows": $ROWS, "cats": $CATS, "row_bytes": $ROW_BYTES, "cp_files": $CP_FILES,
           "versions": $VERSIONS, "hist_reads": $HIST_READS, "pull_epochs": $PULL_EPOCHS, "rss_rows": $RSS_ROWS,
           "rss_flush_every": $RSS_FLUSH_EVERY, "hist_cat_reads": $HIST_CAT_READS, "runs": $RUNS, "warmup": $WARMUP, "cp_runs": $CP_RUNS,
           "cold_runs": $COLD_RUNS, "started": "$STARTED", "nproc": "$(nproc)", "cpu": cpu,
           "memory": "%.1f GiB" % (mem / 1048576), "kernel": "$(uname -r)", "fstype": "$(stat -f -c %T "$WORK")",
           "commit": "$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' + uncommitted changes')",
           "go": "$(go version | cut -d' ' -f3)", "hyperfine": "$(hyperfine --version)",
           "can_drop": $CAN_DROP == 1}, open(sys.argv[1], "w"), indent=1)
EOF
( while :; do echo "$(date +%s) $(cut -d' ' -f1 /proc/loadavg)" >>"$RES/load.txt"; sleep 10; done ) &
SAMPLER_PID=$!

NEEDLE=zanzibarquill # benchtool's needle: one row in 100 holds it
H1="$WORK/home"       # the vault that is measured
MNT="$WORK/mnt"
NAT="$WORK/native" # the native twin of the mount's tree
mkdir -p "$MNT" "$NAT"/{entity,state,reference,journal}


# --- processes -----------------------------------------------------------------------------------
DEVCHAIN_PID="" PROXY_PID="" MOUNT_PID="" MOUNT_DIR=""
cleanup() {
	set +e
	[[ -n $SAMPLER_PID ]] && kill "$SAMPLER_PID" 2>/dev/null && wait "$SAMPLER_PID" 2>/dev/null
	[[ -n $MOUNT_PID ]] && mount_stop
	[[ -n $PROXY_PID ]] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null
	if [[ -n $DEVCHAIN_PID ]]; then
		kill -TERM "$DEVCHAIN_PID" 2>/dev/null
		wait "$DEVCHAIN_PID" 2>/dev/null
	fi
	for d in "$WORK"/mnt*; do mountpoint -q "$d" 2>/dev/null && fusermount3 -uz "$d"; done
	if [[ $KEEP != 1 && -d $WORK ]]; then
		rm -rf "$WORK/home" "$WORK"/home-* "$WORK/native" "$WORK/cpsrc" "$WORK"/mnt*
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

devchain_start() { # HOME: a kintfs devchain process for the vaults under HOME/devchain
	mkdir -p "$1/devchain"
	chmod 700 "$1" "$1/devchain"
	"$BIN" devchain --datadir "$1/devchain" --http 127.0.0.1:0 >"$WORK/devchain.out" 2>"$WORK/devchain.log" &
	DEVCHAIN_PID=$!
	for _ in $(seq 1 600); do
		[[ -s $WORK/devchain.out ]] && break
		kill -0 "$DEVCHAIN_PID" 2>/dev/null || die "devchain exited: $(cat "$WORK/devchain.log")"
		sleep 0.2
	done
	[[ -s $WORK/devchain.out ]] || die "devchain did not come up"
	RPC=$(python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["rpc"])' <"$WORK/devchain.out")
}

MOUNT_ENV=(KINT_CONFIRMATIONS=1 KINT_QUIET_SECONDS=864000 KINT_SIZE_TRIGGER_BYTES=1000000000000)
# mount_start LABEL HOME DIR [mount options...]: a dev mount, in the background, ready on return.
mount_start() {
	local label=$1 home=$2 dir=$3
	shift 3
	local env=("${MOUNT_ENV[@]}" KINT_HOME="$home")
	[[ $PROFILE == 1 ]] && env+=(KINTFS_CPUPROFILE="$RES/cpu-$label.prof")
	[[ $home != "$H1" ]] && env+=(KINT_TENANT="$(basename "$home")") # another vault on the same chain
	mkdir -p "$dir"
	env "${env[@]}" "$BIN" mount --dev "$@" "$dir" >>"$WORK/mount-$label.log" 2>&1 &
	MOUNT_PID=$! MOUNT_DIR=$dir
	local t0
	t0=$(now)
	for _ in $(seq 1 1200); do
		if [[ -e $dir/.kint/status ]]; then
			echo "$label $(since "$t0")" >>"$RES/mount-starts.txt"
			return 0
		fi
		kill -0 "$MOUNT_PID" 2>/dev/null || { MOUNT_PID=""; die "mount $label exited: $(tail -20 "$WORK/mount-$label.log")"; }
		sleep 0.1
	done
	die "mount $label did not come up: $(tail -20 "$WORK/mount-$label.log")"
}
mount_stop() { # SIGTERM (flush + unmount) and wait
	kill -TERM "$MOUNT_PID" 2>/dev/null || true
	local i
	for i in $(seq 1 1200); do kill -0 "$MOUNT_PID" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$MOUNT_PID" 2>/dev/null; then
		note "mount $MOUNT_PID did not stop on SIGTERM; killing it"
		kill -KILL "$MOUNT_PID" 2>/dev/null || true
		fusermount3 -uz "$MOUNT_DIR" 2>/dev/null || true
	fi
	wait "$MOUNT_PID" 2>/dev/null || true
	MOUNT_PID=""
}
vmhwm_kb() { awk '/^VmHWM:/{print $2}' "/proc/$1/status"; }
vmrss_kb() { awk '/^VmRSS:/{print $2}' "/proc/$1/status"; }

ctl_flush() { echo flush >"$1/.kint/ctl"; }
# flush_measured DIR NAME: time a flush and keep what .kint/status says the push did.
flush_measured() {
	local dir=$1 name=$2 t0 secs staged
	staged=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["staged_rows"]+s["staged_deletions"])' "$dir/.kint/status")
	t0=$(now)
	ctl_flush "$dir"
	secs=$(since "$t0")
	python3 - "$dir/.kint/status" "$secs" "$staged" >"$RES/$name.json" <<'EOF'
import json, sys
st = json.load(open(sys.argv[1]))
lp = (st.get("last_push") or {})
rep = lp.get("report") or {}
eps = rep.get("anchored") or []
json.dump({"seconds": float(sys.argv[2]), "staged_before": int(sys.argv[3]), "rows": rep.get("rows", 0),
           "deleted": rep.get("deleted", 0), "epochs": len(eps),
           "calldata_bytes": sum(e.get("calldata_bytes", 0) for e in eps),
           "gas_used": sum(e.get("gas_used", 0) for e in eps), "error": lp.get("error", ""),
           "staged_after": st["staged_rows"] + st["staged_deletions"]}, sys.stdout)
EOF
	note "$name: $(cat "$RES/$name.json")"
}

# hf NAME CMD...: hyperfine, mount command first, native second (and any more after).
hf() {
	local name=$1
	shift
	hyperfine --style basic --warmup "${HF_WARMUP:-$WARMUP}" --runs "${HF_RUNS:-$RUNS}" --export-json "$RES/hf-$name.json" "$@" >"$RES/hf-$name.txt" 2>&1 ||
		{ cat "$RES/hf-$name.txt" >&2; die "hyperfine $name failed"; }
	python3 - "$RES/hf-$name.json" <<'EOF' >&2
import json, sys
r = json.load(open(sys.argv[1]))["results"]
print("   " + "   ".join("%s: median %.4fs" % (x["command"][:60], x["median"]) for x in r))
print("   ratio mount/native %.2f" % (r[0]["median"] / r[1]["median"]))
EOF
}

# --- the measured vault: its tree, populated through the mount -------------------------------------
say "dev chain and mount (KINT_HOME=$H1)"
devchain_start "$H1"
note "dev chain at $RPC (pid $DEVCHAIN_PID)"
mount_start main "$H1" "$MNT"
note "mounted $MNT (pid $MOUNT_PID)"

say "generating $ROWS rows of ~$ROW_BYTES bytes ($CATS categories x $KEYS keys)"
"$BT" gen -dir "$NAT/entity" -cats "$CATS" -keys "$KEYS" -size "$ROW_BYTES" -variant 1 >"$RES/gen-native.json"
mkdir -p "$NAT/entity/hist" && printf '{"v":0}' >"$NAT/entity/hist/row" # the history row's twin
t0=$(now)
"$BT" copy -src "$NAT/entity" -dst "$MNT/entity" >"$RES/populate.json"
note "copied into the mount in $(since "$t0")s"
flush_measured "$MNT" flush-new

if ! skipped warm; then
	say "warm: grep -r, find, ls -lR (xattrs on)"
	hf grep-warm "grep -r $NEEDLE $MNT | wc -l" "grep -r $NEEDLE $NAT | wc -l"
	hf find-warm "find $MNT -type f | wc -l" "find $NAT -type f | wc -l"
	hf lslR-xattrs "ls -lR $MNT | wc -l" "ls -lR $NAT | wc -l"
fi

if ! skipped cp; then
	say "cp -r of $CP_FILES files of ~$ROW_BYTES bytes (mount: durable on close; native: fsync per file)"
	"$BT" gen -dir "$WORK/cpsrc" -prefix cpbench -cats 1 -keys "$CP_FILES" -size "$ROW_BYTES" -variant 9 >/dev/null
	mkdir -p "$NAT/cpdst" "$NAT/cpdst-nofsync"
	hyperfine --style basic --warmup 1 --runs "$CP_RUNS" --export-json "$RES/hf-cp.json" \
		--prepare "rm -rf $MNT/entity/cpbench000 $NAT/cpdst/cpbench000 $NAT/cpdst-nofsync/cpbench000" \
		"cp -r $WORK/cpsrc/cpbench000 $MNT/entity/" \
		"$BT copy -fsync -src $WORK/cpsrc/cpbench000 -dst $NAT/cpdst/cpbench000" \
		"cp -r $WORK/cpsrc/cpbench000 $NAT/cpdst-nofsync/" >"$RES/hf-cp.txt" 2>&1 ||
		{ cat "$RES/hf-cp.txt" >&2; die "hyperfine cp failed"; }
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print("   mount %.3fs, native fsync %.3fs, native no fsync %.3fs, ratio %.2f" % (r[0]["median"], r[1]["median"], r[2]["median"], r[0]["median"]/r[1]["median"]))' "$RES/hf-cp.json" >&2
	rm -rf "$MNT/entity/cpbench000" "$NAT/cpdst" "$NAT/cpdst-nofsync"
	ctl_flush "$MNT" # the copies are gone; anchor nothing but what is left (their deletions, if any)
fi

if ! skipped flush; then
	say "flush of $ROWS changed rows"
	t0=$(now)
	"$BT" gen -dir "$MNT/entity" -cats "$CATS" -keys "$KEYS" -size "$ROW_BYTES" -variant 2 >"$RES/rewrite.json"
	note "rewrote $ROWS rows through the mount in $(since "$t0")s"
	"$BT" gen -dir "$NAT/entity" -cats "$CATS" -keys "$KEYS" -size "$ROW_BYTES" -variant 2 >/dev/null
	flush_measured "$MNT" flush-changed
fi

# --- pull: a second machine catches up with the vault ------------------------------------------------
run_pull_bench() {
	local epochs=$1 H2="$WORK/home-pull" H3="$WORK/home-pull-primed" info owner contract pass
	say "pull: a second machine (KINT_HOME=$H2) pulls the $epochs-epoch vault, through a counting RPC proxy"
	"$BT" rpcproxy -target "$RPC" >"$WORK/proxy.out" 2>"$WORK/proxy.log" &
	PROXY_PID=$!
	for _ in $(seq 1 100); do [[ -s $WORK/proxy.out ]] && break; sleep 0.05; done
	local proxy
	proxy=$(head -1 "$WORK/proxy.out")
	info="$H1/devchain/devchain.json"
	owner=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["accounts"][0]["address"])' "$info")
	contract=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["contract"])' "$info")
	pass="$H1/dev-passphrase"
	local h
	for h in "$H2" "$H3"; do
		KINT_HOME=$h "$BIN" init --owner "$owner" --tenant dev --rpc "$proxy" --contract "$contract" \
			--passphrase-stdin <"$pass" >"$RES/init-$(basename "$h").txt" 2>&1 || die "init $h: $(cat "$RES/init-$(basename "$h").txt")"
	done
	local name home extra t0
	for spec in "pull-cold:$H2:" "pull-again:$H2:" "pull-full-cached:$H2:--full" "pull-primed:$H3:"; do
		IFS=: read -r name home extra <<<"$spec"
		if [[ $name == pull-primed ]]; then # a fresh replica whose epoch cache is already there
			mkdir -p "$H3/epochs" && cp -r "$H2"/epochs/. "$H3/epochs/"
		fi
		curl -s "$proxy/__stats?reset=1" >/dev/null
		t0=$(now)
		# shellcheck disable=SC2086
		KINT_HOME=$home KINT_CONFIRMATIONS=1 "$BIN" pull --json $extra >"$RES/$name.report.json" 2>"$RES/$name.err" ||
			die "$name failed: $(cat "$RES/$name.err")"
		echo "$(since "$t0")" >"$RES/$name.seconds"
		curl -s "$proxy/__stats" >"$RES/$name.rpc.json"
		python3 - "$RES/$name.report.json" "$RES/$name.rpc.json" "$RES/$name.seconds" "$epochs" "$RES/$name.err" >"$RES/$name.json" <<'EOF'
import json, sys
rep, rpc = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
secs, epochs = float(open(sys.argv[3]).read()), int(sys.argv[4])
json.dump({"seconds": secs, "epochs": epochs, "walked": rep.get("walked", 0), "applied": rep.get("applied", 0),
           "fetched": rep.get("fetched", 0), "from_cache": rep.get("from_cache", 0), "changed": rep.get("changed", 0),
           "rpc_calls": rpc["rpc_calls"], "http_requests": rpc["http_requests"], "methods": rpc["methods"],
           "response_bytes": rpc["response_bytes"], "mirror_seq": rep["mirror"]["seq"], "head_seq": rep["head"]["seq"],
           "note": " ".join(l.strip() for l in open(sys.argv[5]) if l.strip())[:200]}, sys.stdout)
EOF
		note "$name: $(cat "$RES/$name.json")"
	done
	kill "$PROXY_PID" 2>/dev/null
	wait "$PROXY_PID" 2>/dev/null || true
	PROXY_PID=""
}

epoch_count() { grep -c . "$MNT/.kint/blocks" || true; }

# --- history: one row with VERSIONS versions, one epoch each -------------------------------------
NEED_PULL=1
skipped pull && NEED_PULL=0
if ! skipped hist; then
	say "history: $VERSIONS versions of entity/hist/row, one flush each (bounded by ${HIST_MAX_SECONDS}s)"
	PAD=$(printf '%*s' $((ROW_BYTES - 40)) '' | tr ' ' 'h')
	: >"$RES/hist-versions.txt"
	t0=$(now)
	deadline=$((SECONDS + HIST_MAX_SECONDS))
	v=0
	n=$(epoch_count)
	while :; do
		if [[ $NEED_PULL == 1 ]] && ((n >= PULL_EPOCHS)); then
			run_pull_bench "$n"
			NEED_PULL=0
			say "history, continued"
		fi
		if ((v >= VERSIONS)) && [[ $NEED_PULL == 0 ]]; then break; fi
		if ((SECONDS >= deadline)); then
			note "history: time bound reached after $v versions"
			break
		fi
		v=$((v + 1))
		printf '{"v":%d,"pad":"%s"}' "$v" "$PAD" >"$MNT/entity/hist/row"
		ctl_flush "$MNT"
		last=$(tail -n1 "$MNT/.kint/blocks")
		read -r n blk _ <<<"$last"
		echo "$blk $v" >>"$RES/hist-versions.txt"
		if ((v % 50 == 0)); then printf '\r   %d versions, %d epochs, %ss   ' "$v" "$n" "$(since "$t0")" >&2; fi
	done
	echo >&2
	echo "{\"versions\": $v, \"seconds\": $(since "$t0"), \"epochs_total\": $n}" >"$RES/hist-write.json"
	note "history written: $(cat "$RES/hist-write.json")"
	"$BT" readhist -cur "$MNT/entity/hist/row" -hist "$MNT/@%d/entity/hist/row" -versions "$RES/hist-versions.txt" -n "$HIST_READS" >"$RES/readhist.json"
	note "reads: $(cat "$RES/readhist.json")"
	# The same as a user does it: cat at HIST_CAT_READS random blocks (a new block nearly every
	# time: epoch blocks and the blocks between them) vs cat of the current version as often.
	cat >"$WORK/cat-hist.sh" <<EOF
shuf -n $HIST_CAT_READS "$RES/hist-versions.txt" | awk 'BEGIN{srand()} {print \$1 + int(rand() * 2)}' |
	while read -r b; do cat "$MNT/@\$b/entity/hist/row"; done
EOF
	cat >"$WORK/cat-cur.sh" <<EOF
shuf -n $HIST_CAT_READS "$RES/hist-versions.txt" | awk 'BEGIN{srand()} {print \$1 + int(rand() * 2)}' |
	while read -r b; do cat "$MNT/entity/hist/row"; done
EOF
	HF_WARMUP=1 HF_RUNS=$((RUNS < 5 ? RUNS : 5)) hf hist-cat "bash $WORK/cat-hist.sh" "bash $WORK/cat-cur.sh"
fi
if [[ $NEED_PULL == 1 ]]; then
	run_pull_bench "$(epoch_count)"
	NEED_PULL=0
fi

if ! skipped backfill; then
	say "backfill: a fresh machine restores $PULL_EPOCHS one-row epochs under a snapshot and records their history"
	KINT_BENCH_EPOCHS=$PULL_EPOCHS go test -count=1 -run '^$' -bench '^BenchmarkBackfill$' -benchtime=1x ./replica/ >"$RES/backfill.out" 2>&1 ||
		die "backfill benchmark: $(tail -5 "$RES/backfill.out")"
	python3 - "$RES/backfill.out" "$PULL_EPOCHS" >"$RES/backfill.json" <<'EOF2'
import json, re, sys
line = next(l for l in open(sys.argv[1]) if l.startswith("BenchmarkBackfill"))
eps, rpc = re.search(r"([0-9.]+) epochs/s", line).group(1), re.search(r"([0-9.]+) rpc/epoch", line).group(1)
json.dump({"epochs": int(sys.argv[2]), "epochs_per_second": float(eps), "rpc_per_epoch": float(rpc)}, sys.stdout)
EOF2
	note "backfill: $(cat "$RES/backfill.json")"
fi

if ! skipped gas; then
	say "gas of every push after the first vs the EIP-7623 calldata floor"
	cp "$MNT/.kint/blocks" "$RES/blocks.txt"
	"$BT" gas -rpc "$RPC" -blocks "$RES/blocks.txt" >"$RES/gas.json"
	note "$(cat "$RES/gas.json")"
fi

# --- cold grep: the first pass after a fresh mount, page cache dropped, vs native cold ------------
if ! skipped cold; then
	say "cold grep -r: $COLD_RUNS fresh mounts vs native after drop_caches (drop_caches possible: $CAN_DROP)"
	: >"$RES/cold.txt"
	for i in $(seq 1 "$COLD_RUNS"); do
		mount_stop
		drop_caches
		mount_start "cold$i" "$H1" "$MNT"
		t0=$(now)
		grep -r "$NEEDLE" "$MNT" | wc -l >/dev/null
		echo "mount $(since "$t0")" >>"$RES/cold.txt"
		drop_caches
		t0=$(now)
		grep -r "$NEEDLE" "$NAT" | wc -l >/dev/null
		echo "native $(since "$t0")" >>"$RES/cold.txt"
		note "pass $i: $(tail -2 "$RES/cold.txt" | tr '\n' ' ')"
	done
fi

if ! skipped ro; then
	say "warm grep -r on a --read-only mount"
	mount_stop
	mount_start ro "$H1" "$MNT" --read-only
	hf grep-warm-ro "grep -r $NEEDLE $MNT | wc -l" "grep -r $NEEDLE $NAT | wc -l"
fi

if ! skipped noxattr; then
	say "warm ls -lR with --xattrs=false"
	mount_stop
	mount_start noxattr "$H1" "$MNT" --xattrs=false
	hf lslR-noxattrs "ls -lR $MNT | wc -l" "ls -lR $NAT | wc -l"
fi
mount_stop

# --- peak RSS of a mount holding RSS_ROWS rows ------------------------------------------------
if ! skipped rss; then
	H4="$WORK/home-rss"
	MNT4="$WORK/mnt-rss"
	say "peak RSS: a mount of $RSS_ROWS rows (another vault on the same chain), flushed every $RSS_FLUSH_EVERY rows"
	mkdir -p "$H4" && chmod 700 "$H4" && ln -s "$H1/devchain" "$H4/devchain"
	mount_start rss "$H4" "$MNT4"
	hwm_empty=$(vmhwm_kb "$MOUNT_PID")
	rss_keys=100
	rss_cats=$(((RSS_ROWS + rss_keys - 1) / rss_keys))
	"$BT" gen -dir "$MNT4/entity" -cats "$rss_cats" -keys "$rss_keys" -size "$ROW_BYTES" -variant 1 \
		-flush-every "$RSS_FLUSH_EVERY" -ctl "$MNT4/.kint/ctl" -max-seconds "$RSS_MAX_SECONDS" >"$RES/rss-populate.json"
	hwm_populate=$(vmhwm_kb "$MOUNT_PID")
	rss_populate=$(vmrss_kb "$MOUNT_PID")
	staged=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["staged_rows"])' "$MNT4/.kint/status")
	note "populated: $(cat "$RES/rss-populate.json"); VmHWM ${hwm_populate} kB, staged $staged"
	mount_stop
	drop_caches
	mount_start rss-reopen "$H4" "$MNT4"
	hwm_open=$(vmhwm_kb "$MOUNT_PID")
	t0=$(now)
	files=$(find "$MNT4" -type f | wc -l)
	grep -r "$NEEDLE" "$MNT4" | wc -l >/dev/null
	ls -lR "$MNT4" | wc -l >/dev/null
	walk=$(since "$t0")
	hwm_walk=$(vmhwm_kb "$MOUNT_PID")
	rss_walk=$(vmrss_kb "$MOUNT_PID")
	# and a write + flush of one batch, in that same mount
	batch_cats=$(((RSS_FLUSH_EVERY + rss_keys - 1) / rss_keys))
	"$BT" gen -dir "$MNT4/entity" -cats "$batch_cats" -keys "$rss_keys" -size "$ROW_BYTES" -variant 2 >/dev/null
	t0=$(now)
	ctl_flush "$MNT4"
	rss_flush=$(since "$t0")
	hwm_final=$(vmhwm_kb "$MOUNT_PID")
	rss_final=$(vmrss_kb "$MOUNT_PID")
	mount_stop
	python3 - "$RES/rss-populate.json" >"$RES/rss.json" <<EOF
import json, sys
p = json.load(open(sys.argv[1]))
json.dump({"rows": p["files"], "populate_seconds": p["seconds"], "write_seconds": p["write_seconds"],
           "flush_seconds": p["flush_seconds"], "flushes": p["flushes"], "stopped_by_time_bound": p["stopped_by_time_bound"],
           "staged_after_populate": $staged, "hwm_empty_kb": $hwm_empty, "hwm_populate_kb": $hwm_populate, "rss_after_populate_kb": $rss_populate,
           "hwm_fresh_mount_kb": $hwm_open, "files_seen": $files, "walk_seconds": $walk,
           "hwm_after_walk_kb": $hwm_walk, "rss_after_walk_kb": $rss_walk, "batch_rows": $((batch_cats * rss_keys)),
           "batch_flush_seconds": $rss_flush, "hwm_final_kb": $hwm_final, "rss_final_kb": $rss_final}, sys.stdout)
EOF
	note "$(cat "$RES/rss.json")"
fi


PARAMS_SECONDS=$((SECONDS - RUN_T0))
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); p["seconds"]=int(sys.argv[2]); json.dump(p, open(sys.argv[1],"w"), indent=1)' "$RES/params.json" "$PARAMS_SECONDS"
mkdir -p "$(dirname "$OUT")"
render_report "$RES" "$OUT"
say "written $OUT; raw results in $RES"
