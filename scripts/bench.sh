#!/usr/bin/env bash
# kintfs benchmarks (make bench): builds scripts/benchtool and runs `benchtool run`, which
# starts a dev chain and dev mounts, measures the same work on the mount and on a native twin
# of its tree side by side, and writes docs/benchmarks.md (scripts/benchtool/run.go).
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
# SKIP="warm ro cp grepw durable flush hist pull backfill cold noxattr rss gas bucket b2b flushown flushmem restore"
# (any subset; bucket and b2b are the replica tests behind the bucket-policy and back-to-back numbers,
# flushown and restore the replica benchmarks of the flush's own time and the 2,000-epoch cold restore, flushmem the
# first with its vaults on tmpfs), PROFILE=1 (each mount
# writes a CPU profile, KINTFS_CPUPROFILE, kept in the results directory), KEEP=1,
# REPORT_FROM=bench-work/run-.../results (only render that run's results again, to OUT).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p bench-work
go build -o bench-work/benchtool ./scripts/benchtool
exec bench-work/benchtool run
