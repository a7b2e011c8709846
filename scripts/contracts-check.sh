#!/usr/bin/env bash
# Rebuilds the contracts into a temporary directory and fails when the committed artifacts
# (contracts/build) or the generated bindings (contracts/*.go) differ from the fresh build,
# or when the compiled ABI is not byte-identical to the specification's
# spec/EpochAnchor.abi.json (looked up in $KINTFS_SPEC_DIR, else ../shared/spec).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

make --no-print-directory -f Makefile.contracts contracts CONTRACTS_OUT="$tmp" >"$tmp/build.log" 2>&1 || {
	cat "$tmp/build.log" >&2
	echo "contracts-check: the rebuild failed" >&2
	exit 1
}

status=0
for f in build/EpochAnchor.abi.json build/EpochAnchor.bin build/TestWallet.abi.json build/TestWallet.bin \
	epochanchor.go testwallet.go; do
	if ! cmp -s "$tmp/$f" "contracts/$f"; then
		echo "contracts-check: contracts/$f differs from a fresh build:" >&2
		diff -u "contracts/$f" "$tmp/$f" | head -20 >&2 || true
		status=1
	fi
done

spec_dir=${KINTFS_SPEC_DIR:-$root/../shared/spec}
if [ -f "$spec_dir/EpochAnchor.abi.json" ]; then
	if ! cmp -s "$spec_dir/EpochAnchor.abi.json" contracts/build/EpochAnchor.abi.json; then
		echo "contracts-check: contracts/build/EpochAnchor.abi.json is not the spec ABI ($spec_dir/EpochAnchor.abi.json)" >&2
		status=1
	fi
else
	echo "contracts-check: spec ABI not found in $spec_dir; set KINTFS_SPEC_DIR" >&2
	status=1
fi

if [ "$status" -eq 0 ]; then
	echo "contracts-check: committed artifacts and bindings match a fresh build; the ABI is the spec's"
else
	echo "contracts-check: run 'make contracts' and commit the result" >&2
fi
exit "$status"
