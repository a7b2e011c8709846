package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/spf13/pflag"

	"kintfs/chain"
	"kintfs/chain/devchain/devinfo"
	"kintfs/fs"
	"kintfs/replica"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
)

type doctorOptions struct {
	allowOther bool
	json       bool
}

// minSessionBalance is what kint calls enough to push: 0.00002 ETH.
var minSessionBalance = big.NewInt(20_000_000_000_000)

func init() {
	register(&command{
		name:  "doctor",
		usage: "[--allow-other] [--json] [MNT]",
		short: "check every moving part (home, keys, RPCs, contract, session key, mirror, FUSE) and say which fails",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &doctorOptions{}
			fs.BoolVar(&o.allowOther, "allow-other", false, "also check that /etc/fuse.conf allows --allow-other")
			fs.BoolVar(&o.json, "json", false, "print the checks as JSON: {checks: [{check, result (ok, warn, fail), message}], failed, warned}")
			return func(ctx context.Context, cio *cmdIO, args []string) error { return runDoctor(ctx, cio, o, args) }
		},
	})
}

type doctorRun struct {
	ctx    context.Context
	cio    *cmdIO
	failed int
	warned int
	json   bool          // collect the checks for one JSON document instead of printing lines
	checks []doctorCheck // with json
}

// doctorCheck is one check as doctor --json prints it.
type doctorCheck struct {
	Check   string `json:"check"`
	Result  string `json:"result"` // ok, warn or fail
	Message string `json:"message"`
}

func (d *doctorRun) line(tag, name, format string, args ...any) {
	if d.json {
		d.checks = append(d.checks, doctorCheck{Check: name, Result: strings.ToLower(strings.TrimSpace(tag)), Message: fmt.Sprintf(format, args...)})
		return
	}
	fmt.Fprintf(d.cio.out, "[%s] %s: %s\n", tag, name, fmt.Sprintf(format, args...))
}

// printJSON prints the checks collected under --json.
func (d *doctorRun) printJSON() {
	if !d.json {
		return
	}
	checks := d.checks
	if checks == nil {
		checks = []doctorCheck{}
	}
	printJSON(d.ctx, d.cio, struct {
		Checks []doctorCheck `json:"checks"`
		Failed int           `json:"failed"`
		Warned int           `json:"warned"`
	}{checks, d.failed, d.warned})
}
func (d *doctorRun) ok(name, format string, args ...any) { d.line("ok  ", name, format, args...) }
func (d *doctorRun) warn(name, format string, args ...any) {
	d.warned++
	d.line("WARN", name, format, args...)
}
func (d *doctorRun) fail(name, format string, args ...any) {
	d.failed++
	d.line("FAIL", name, format, args...)
}

func runDoctor(ctx context.Context, cio *cmdIO, o *doctorOptions, args []string) error {
	if len(args) > 1 {
		return usagef("doctor [--allow-other] [--json] [MNT]")
	}
	d := &doctorRun{ctx: ctx, cio: cio, json: o.json}
	defer d.printJSON()
	home, err := defaultHome(cio.set)
	if err != nil {
		d.fail("KINT_HOME", "%v", err)
		return exitCodeError{code: exitFailure, msg: "1 check(s) failed"}
	}
	d.checkHome(home)
	v := d.checkVault(cio, home)
	if v != nil {
		d.checkDEK(home, v)
		d.checkRecovery(home, v)
		primary := d.checkPrimary(ctx, cio, v)
		if primary != nil {
			defer primary.Close()
		}
		d.checkSecondary(ctx, cio, v)
		d.checkContract(ctx, v, primary != nil)
		d.checkSessionKey(ctx, home, v, primary)
		d.checkMirror(ctx, cio, home, v, primary)
	}
	d.checkFUSE()
	if o.allowOther {
		if os.Getuid() == 0 {
			d.ok("user_allow_other", "root may use --allow-other without it")
		} else if err := checkUserAllowOther(); err != nil {
			d.fail("user_allow_other", "%v", err)
		} else {
			d.ok("user_allow_other", "/etc/fuse.conf allows --allow-other")
		}
	}
	mnt := ""
	if len(args) == 1 {
		mnt = args[0]
	} else if dir, ok := mountedAt(home); ok {
		mnt = dir
	}
	d.checkMountpoint(mnt)
	if d.failed > 0 {
		return exitCodeError{code: exitFailure, msg: fmt.Sprintf("%d check(s) failed, %d warning(s)", d.failed, d.warned)}
	}
	return nil
}

func (d *doctorRun) checkHome(home homedir.Home) {
	fi, err := os.Stat(home.Dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		d.fail("KINT_HOME", "%s does not exist: run kintfs init (or kintfs mount --dev)", home)
	case err != nil:
		d.fail("KINT_HOME", "%v", err)
	case !fi.IsDir():
		d.fail("KINT_HOME", "%s is not a directory", home)
	case fi.Mode().Perm()&0o077 != 0:
		d.fail("KINT_HOME", "%s is mode %04o, not 0700: others can read the cached keys' files (chmod 700 %s)", home, fi.Mode().Perm(), home)
	default:
		d.ok("KINT_HOME", "%s, mode 0700", home)
	}
}

func (d *doctorRun) checkVault(cio *cmdIO, home homedir.Home) *homedir.VaultConfig {
	v, err := loadVaultConfig(cio.set, home)
	if err != nil {
		d.fail("vault", "%v", err)
		return nil
	}
	d.ok("vault", "owner %s, tenant %q, space %s, chain %d, contract %s", v.Owner.Hex(), v.Tenant, v.Space16(), v.ChainID, v.Contract.Hex())
	return v
}

func (d *doctorRun) checkDEK(home homedir.Home, v *homedir.VaultConfig) {
	exp, err := home.DEKExpiry(v.Space)
	if err != nil {
		d.fail("data key", "%v", err)
		return
	}
	left := time.Until(exp)
	if left <= 0 {
		d.fail("data key", "%v (expired %s)", homedir.ErrKeyExpired, exp.UTC().Format(time.RFC3339))
		return
	}
	if _, err := home.LoadDEK(v.Space); err != nil {
		d.fail("data key", "%v", err)
		return
	}
	if left < time.Hour {
		d.warn("data key", "cached, expires in %s (%s): kintfs init again soon", left.Round(time.Second), exp.UTC().Format(time.RFC3339))
		return
	}
	d.ok("data key", "cached, expires %s", exp.UTC().Format(time.RFC3339))
}

func (d *doctorRun) checkRecovery(home homedir.Home, v *homedir.VaultConfig) {
	path := home.RecoveryFile(v)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && v.CreatedHere:
		d.fail("recovery file", "%s is missing on the machine that created the vault: kintfs recovery-code writes it from the cached data key", path)
	case errors.Is(err, os.ErrNotExist):
		d.warn("recovery file", "none on this machine (it joined the vault); kintfs recovery-code writes one from the cached data key")
	case err != nil:
		d.fail("recovery file", "%v", err)
	case fi.Mode().Perm()&0o077 != 0:
		d.fail("recovery file", "%s is mode %04o, not 0600 (chmod 600 %s)", path, fi.Mode().Perm(), path)
	default:
		d.ok("recovery file", "%s, mode 0600: keep a copy offline", path)
	}
}

func (d *doctorRun) checkPrimary(ctx context.Context, cio *cmdIO, v *homedir.VaultConfig) *chain.Client {
	if v.RPC == "" {
		d.fail("primary RPC", "no RPC URL (KINT_RPC_URL)")
		return nil
	}
	c, err := dialChain(ctx, cio.set, v.RPC, v.Contract)
	if err != nil {
		d.fail("primary RPC", "%s cannot be reached", redactURL(v.RPC))
		return nil
	}
	if c.ChainID() != v.ChainID {
		d.fail("primary RPC", "%s serves chain %d, but the vault lives on chain %d", redactURL(v.RPC), c.ChainID(), v.ChainID)
		c.Close()
		return nil
	}
	d.ok("primary RPC", "%s, chain id %d", redactURL(v.RPC), c.ChainID())
	return c
}

func (d *doctorRun) checkSecondary(ctx context.Context, cio *cmdIO, v *homedir.VaultConfig) {
	set := cio.set
	allowSingle := set.on("KINT_ALLOW_SINGLE_RPC")
	if v.ChainID == devinfo.ChainID && set.given("KINT_RPC_URL_2") == "" {
		d.ok("secondary RPC", "not needed on the dev chain (chain id %d)", v.ChainID)
		return
	}
	second := secondRPC(set, v.RPC)
	if sameEndpoint(v.RPC, second) {
		d.warn("secondary RPC", "%s is the same endpoint as the primary: a cold start trusts one operator", redactURL(second))
		return
	}
	bad := d.fail
	if allowSingle {
		bad = d.warn
	}
	c, err := dialChain(ctx, set, second, v.Contract)
	if err != nil {
		bad("secondary RPC", "%s cannot be reached: a cold start refuses (set KINT_RPC_URL_2, or KINT_ALLOW_SINGLE_RPC=1)", redactURL(second))
		return
	}
	defer c.Close()
	if c.ChainID() != v.ChainID {
		d.fail("secondary RPC", "%s serves chain %d, but the vault lives on chain %d", redactURL(second), c.ChainID(), v.ChainID)
		return
	}
	d.ok("secondary RPC", "%s, chain id %d", redactURL(second), c.ChainID())
}

// checkContract reads the code at the contract address (eth_getCode), which the chain
// client does not expose.
func (d *doctorRun) checkContract(ctx context.Context, v *homedir.VaultConfig, reachable bool) {
	if !reachable {
		d.fail("contract", "%s: not checked, the primary RPC is not usable", v.Contract.Hex())
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	rc, err := rpc.DialContext(cctx, v.RPC)
	if err != nil {
		d.fail("contract", "%s: %v", v.Contract.Hex(), errors.New("cannot dial the primary RPC"))
		return
	}
	defer rc.Close()
	var code hexutil.Bytes
	if err := rc.CallContext(cctx, &code, "eth_getCode", v.Contract, "latest"); err != nil {
		d.fail("contract", "%s: eth_getCode failed", v.Contract.Hex())
		return
	}
	if len(code) == 0 {
		d.fail("contract", "no code at %s on chain %d: check KINT_CONTRACT", v.Contract.Hex(), v.ChainID)
		return
	}
	d.ok("contract", "%s has %d bytes of code", v.Contract.Hex(), len(code))
}

func (d *doctorRun) checkSessionKey(ctx context.Context, home homedir.Home, v *homedir.VaultConfig, c *chain.Client) {
	key, err := loadSessionKey(home)
	if err != nil {
		d.fail("session key", "none on this machine (kintfs session-key create)")
		return
	}
	addr := crypto.PubkeyToAddress(key.PublicKey)
	d.ok("session key", "%s", addr.Hex())
	if c == nil {
		d.fail("session key balance", "not checked, the primary RPC is not usable")
		d.fail("session key authorization", "not checked, the primary RPC is not usable")
		return
	}
	if bal, err := c.Balance(ctx, addr); err != nil {
		d.fail("session key balance", "read balance: %v", err)
	} else if bal.Cmp(minSessionBalance) <= 0 {
		d.fail("session key balance", "%s ETH, not more than 0.00002 ETH: fund %s", chain.FormatETH(bal), addr.Hex())
	} else {
		d.ok("session key balance", "%s ETH", chain.FormatETH(bal))
	}
	exp, err := c.SessionKeyExpiry(ctx, v.Owner, addr)
	now := time.Now()
	switch {
	case err != nil:
		d.fail("session key authorization", "read expiry: %v", err)
	case exp == 0:
		d.fail("session key authorization", "%s is not authorized to push for %s (kintfs authorize)", addr.Hex(), v.Owner.Hex())
	case int64(exp) <= now.Unix():
		d.fail("session key authorization", "expired %s (kintfs authorize)", time.Unix(int64(exp), 0).UTC().Format(time.RFC3339))
	case int64(exp) < now.Add(72*time.Hour).Unix():
		d.warn("session key authorization", "authorized for %s, expires %s: kintfs authorize again soon", v.Owner.Hex(), time.Unix(int64(exp), 0).UTC().Format(time.RFC3339))
	default:
		d.ok("session key authorization", "authorized for %s until %s", v.Owner.Hex(), time.Unix(int64(exp), 0).UTC().Format(time.RFC3339))
	}
}

// doctorStatus is the replica's status: from the mount when one holds the database (the
// forwarded status --json), else from the database opened offline.
func doctorStatus(set settings, home homedir.Home, v *homedir.VaultConfig) (*replica.Status, string, error) {
	if _, mounted := mountedAt(home); mounted {
		reply, ok := forward(set, []string{"status", "--json"})
		if !ok || reply.Code != 0 {
			return nil, "", fmt.Errorf("the mount did not answer status: %s", reply.Err)
		}
		var st replica.Status
		if err := json.Unmarshal([]byte(reply.Out), &st); err != nil {
			return nil, "", fmt.Errorf("the mount's status: %w", err)
		}
		return &st, " (from the mount)", nil
	}
	rep, err := replica.Open(replica.Options{Home: home, Vault: v, RowPath: fs.PathOfKey})
	if err != nil {
		return nil, "", err
	}
	defer rep.Close()
	st, err := rep.Status()
	return st, "", err
}

func (d *doctorRun) checkMirror(ctx context.Context, cio *cmdIO, home homedir.Home, v *homedir.VaultConfig, c *chain.Client) {
	st, from, err := doctorStatus(cio.set, home, v)
	if err != nil {
		d.fail("mirror", "%v", err)
		d.fail("staged", "not checked: %v", err)
		return
	}
	mirror := st.Mirror
	if c == nil {
		d.fail("head", "not checked, the primary RPC is not usable; mirror at seq %d%s", mirror.Seq, from)
	} else if h, err := c.Head(ctx, v.Owner, v.Space); err != nil {
		d.fail("head", "read head: %v", err)
	} else {
		switch {
		case h.Seq == mirror.Seq && h.Digest == mirror.Digest:
			d.ok("head", "chain head seq %d (block %d), mirror in step%s", h.Seq, h.Block, from)
		case h.Seq > mirror.Seq:
			// ahead is not yet in step: the epoch after the mirror must name the mirror's digest
			// as its prev, or the chain parted ways with this machine below the head
			ev, err := epochAfter(ctx, c, v, h, mirror.Seq)
			switch {
			case err != nil:
				d.warn("head", "chain head seq %d (block %d), mirror at seq %d%s: kintfs pull (not checked for a fork: %v)", h.Seq, h.Block, mirror.Seq, from, err)
			case ev.Prev != mirror.Digest:
				d.fail("head", "chain epoch %d names prev %s, the mirror has %s at seq %d%s: a fork (kintfs pull --discard-local)", ev.Seq, ev.Prev.Hex()[:14], mirror.Digest.Hex()[:14], mirror.Seq, from)
			default:
				d.warn("head", "chain head seq %d (block %d), mirror at seq %d%s: kintfs pull", h.Seq, h.Block, mirror.Seq, from)
			}
		case h.Seq < mirror.Seq:
			d.fail("head", "chain head seq %d is older than the mirror's seq %d%s: a stale RPC, or a chain reset", h.Seq, mirror.Seq, from)
		default:
			d.fail("head", "chain head seq %d has digest %s, the mirror %s%s: a fork (kintfs pull --discard-local)", h.Seq, h.Digest.Hex()[:14], mirror.Digest.Hex()[:14], from)
		}
	}
	if len(st.Gaps) > 0 {
		g := st.Gaps[0]
		d.fail("gaps", "the last pull stopped at epoch %d: %s (kintfs compact --over-skipped, if it will never open)", g.Seq, g.Reason)
	}
	if len(st.Conflicts) > 0 {
		d.warn("conflicts", "%d row(s) in conflict; your versions are kept beside them (kintfs status)", len(st.Conflicts))
	}
	staged := fmt.Sprintf("%d rows (%d bytes) and %d deletions staged, oldest %ds", st.StagedRows, st.StagedBytes, st.StagedDels, st.OldestStaged)
	if st.StagedRows+st.StagedDels == 0 {
		d.ok("staged", "nothing staged: the store matches the last anchored epoch")
	} else if st.OldestStaged > 2*int64(cio.set.duration("KINT_QUIET_SECONDS")/time.Second)+60 {
		d.warn("staged", "%s: unanchored for longer than the quiet delay (kintfs push)", staged)
	} else {
		d.ok("staged", "%s", staged)
	}
	if len(st.Held) > 0 {
		h := st.Held[0]
		d.warn("held", "%d row(s) held, never anchored until fixed; first: %s: %s", len(st.Held), heldName(h), h.Reason)
	} else {
		d.ok("held", "no row held")
	}
	if st.StagedRows+st.StagedDels > 0 {
		d.ok("next flush", "%s", doctorNextFlush(ctx, cio, home, v, c))
	}
	d.checkShapes(st)
}

// checkShapes reports the vault model and the rows anchored in shapes kint's store cannot hold.
func (d *doctorRun) checkShapes(st *replica.Status) {
	switch {
	case st.VaultModel == vault.ModelFull:
		d.ok("vault model", "full: status and meta on every tier and deleting any row but the journal's are allowed; kint cannot hold such rows, so kint must never open this vault")
	default:
		d.ok("vault model", "kint: only what kint's store can hold is anchored (kintfs vault-model full for a vault kint never opens)")
	}
	if n := len(st.KintIncompatible); n > 0 {
		var paths []string
		for _, x := range st.KintIncompatible[:min(n, 5)] {
			paths = append(paths, x.Path+" ("+x.Reason+")")
		}
		more := ""
		if n > 5 {
			more = fmt.Sprintf(" and %d more (kintfs status)", n-5)
		}
		say := d.warn
		if st.VaultModel == vault.ModelFull {
			say = d.ok
		}
		say("kint shapes", "%d anchored row(s) kint's store cannot hold: %s%s; clear them (setfattr -x user.kint.status or user.kint.meta) before kint opens the vault",
			n, strings.Join(paths, ", "), more)
	} else {
		d.ok("kint shapes", "every anchored row has a shape kint's store can hold")
	}
}

func (d *doctorRun) checkFUSE() {
	fi, err := os.Stat(fuseDevice)
	switch {
	case err != nil:
		d.fail("FUSE device", "%s: %v (install fuse3; in a container, pass --device /dev/fuse)", fuseDevice, err)
	case fi.IsDir():
		d.ok("FUSE device", "%s is installed", fuseDevice)
	case fi.Mode()&os.ModeCharDevice == 0:
		d.fail("FUSE device", "%s is not a character device", fuseDevice)
	default:
		if f, err := os.OpenFile(fuseDevice, os.O_RDWR, 0); err != nil {
			d.fail("FUSE device", "%s cannot be opened: %v", fuseDevice, err)
		} else {
			f.Close()
			d.ok("FUSE device", "%s", fuseDevice)
		}
	}
	if p, err := exec.LookPath(fuserBinary); err != nil {
		d.fail(fuserBinary, "not on PATH (install fuse3)")
	} else {
		d.ok(fuserBinary, "%s", p)
	}
}

func (d *doctorRun) checkMountpoint(dir string) {
	if dir == "" {
		d.ok("mount point", "none given and no mount running")
		return
	}
	_, err := os.Stat(dir)
	mounted := err == nil && isKintfsMount(resolveMountpoint(dir))
	if mounted {
		// a stat may be answered from the kernel's cache; a read of the status goes to the mount
		_, err = os.ReadFile(dir + "/.kint/status")
	}
	switch {
	case errors.Is(err, syscall.ENOTCONN), errors.Is(err, syscall.ECONNABORTED):
		d.fail("mount point", "%s is a dead mount (transport endpoint is not connected): run  %s", dir, lazyUnmountHint(dir))
	case errors.Is(err, os.ErrNotExist) && !mounted:
		d.warn("mount point", "%s does not exist", dir)
	case err != nil:
		d.fail("mount point", "%s: %v", dir, err)
	case mounted:
		d.ok("mount point", "%s is mounted and answers", dir)
	default:
		d.ok("mount point", "%s is not mounted, and no dead mount is left on it", dir)
	}
}

// forkWalk bounds how many epochs doctor walks back from the head to check the mirror's link.
const forkWalk = 64

// epochAfter walks back from the head to the epoch at seq+1.
func epochAfter(ctx context.Context, c *chain.Client, v *homedir.VaultConfig, h chain.Head, seq uint64) (*chain.EpochEvent, error) {
	if h.Seq-seq > forkWalk {
		return nil, fmt.Errorf("more than %d epochs behind", forkWalk)
	}
	block, at := h.Block, h.Seq
	for {
		ev, err := c.EpochAt(ctx, v.Owner, v.Space, block, at)
		if err != nil {
			return nil, err
		}
		if at == seq+1 {
			return ev, nil
		}
		block, at = ev.PrevBlock, at-1
	}
}
