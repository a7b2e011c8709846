package replica

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"kintfs/chain"
	"kintfs/replica/homedir"
	"kintfs/replica/ignore"
	"kintfs/replica/store"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// Refusals the CLI maps to kint's exit codes.
var (
	ErrNothingToPush = errors.New("nothing to push: the store matches the last anchored epoch")
	ErrChainMoved    = errors.New("the chain moved: another machine pushed since this machine last pulled")
	ErrFork          = errors.New("fork: the chain's history differs from this machine's mirror (save what you need from the mount, then kintfs pull --discard-local moves the local state aside and restores from the chain)")
	ErrStaleRPC      = errors.New("stale or lying RPC")
	ErrGapOpen       = errors.New("a pull stopped at an epoch this machine cannot apply")
	ErrOffline       = errors.New("cannot reach the RPC")
	ErrNotAuthorized = errors.New("the session key is not authorized to push for this owner")
	// ErrGasPriceCap: the chain's gas price is over Options.MaxGasPrice; nothing was sent.
	ErrGasPriceCap = errors.New("the gas price is over the cap")
	// ErrReverted: a push's transaction was mined and reverted for another reason than a
	// lost race for its seq (ErrChainMoved).
	ErrReverted = errors.New("the push's transaction reverted")
)

// LyingRPC reports whether err is the chain package refusing what an RPC served: an Epoch
// event it withheld, or a transaction that is not the push the event names.
func LyingRPC(err error) bool {
	for _, e := range lyingRPC {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// lyingRPC are the chain package's refusals of what an RPC served.
var lyingRPC = []error{ErrStaleRPC, chain.ErrNoEvent, chain.ErrTxNotFound, chain.ErrTxMismatch,
	chain.ErrWrongContract, chain.ErrNotPush, chain.ErrCalldataMismatch, chain.ErrDigestMismatch, chain.ErrBrokenChain,
	chain.ErrEventMismatch}

// Offline reports whether err means the chain cannot be reached: no client, or an RPC that
// refused or lost every attempt of a call, or never answered. The CLI exits 5 on it, ctl
// answers EHOSTUNREACH.
func Offline(err error) bool {
	return errors.Is(err, ErrOffline) || errors.Is(err, chain.ErrUnreachable)
}

// Options configure a replica.
type Options struct {
	Home   homedir.Home
	Vault  *homedir.VaultConfig
	DEK    [32]byte
	Client Chain // nil: offline, local reads and writes only
	// Connect dials the chain while the replica has no client; each poll, flush and pull
	// tries it again, so a mount started offline comes online. nil: stay as Client says.
	Connect       func(ctx context.Context) (Chain, error)
	SessionKey    *ecdsa.PrivateKey // sends push; nil: cannot push
	Confirmations uint64            // default 2
	// SendAhead bounds the epochs of one push sent ahead of their receipts (0: 16; 1: one at a
	// time, each waited for before the next is sent).
	SendAhead int
	// Log takes the engine's lines at their levels: Debug its routine background steps, Info
	// what it changed, Warn a failure a quiet log still shows. nil: nothing is logged.
	Log *slog.Logger
	// ColdStart checks the head the RPC gave on a machine with no watermark yet against a
	// second, independent RPC; nil: no check (the dev chain).
	ColdStart func(ctx context.Context, head vault.Head) error
	// ReadOnly refuses every change and every push with ErrReadOnly (a --read-only mount).
	ReadOnly bool
	// RowPath names a row by its path under the mount, for the status; nil: tier/key.
	RowPath func(vault.Key) string
	// MaxGasPrice refuses a push (ErrGasPriceCap) whose transaction is priced above it, in wei
	// per gas, before anything is sent; nil: no cap.
	MaxGasPrice *big.Int
}

// Replica is the engine under the mount: the local store, the vault's keys, and the chain.
type Replica struct {
	store      *store.Store // reached only through Replica's own methods, so each one keeps the engine's rules (read-only)
	opt        Options
	vault      *homedir.VaultConfig
	cache      *homedir.EpochCache
	pushMu     sync.Mutex   // one push or pull at a time
	vaultMu    sync.Mutex   // the vault's bucket policy, read beside a push
	pushing    atomic.Bool  // a push is sealing or sending, for status
	heldLogged atomic.Int64 // held rows at the last flush, so a new hold is logged once
	client     atomic.Pointer[chainRef]
	dialMu     sync.Mutex
	// The last failed dial: a ctl command right after it answers at once.
	lastDial time.Time
	dialErr  error
	status   statusState
	worker   *worker
	pushHook func(PushStage, uint64) error // tests pause or fail a push here; nil in production
	// noExitFlush: StopWorker anchors nothing (ctl no-flush, kintfs unmount --no-flush)
	noExitFlush atomic.Bool
	// localRules are the names a new file is kept local under: never staged, never anchored
	localRules *ignore.File
}

// upgradeCache rewrites in kint's form the metadata an earlier kintfs version wrote in the
// epoch cache, which is shared with kint. Only the epochs cached since the last open are read:
// reading every file took 0.8 s at each open of a vault of 9,000 epochs after its pages had
// left the page cache.
func (r *Replica) upgradeCache() {
	after, err := r.store.CacheCheckedTo()
	if err != nil {
		r.warnf("epoch cache: %v", err)
		return
	}
	n, newest, err := r.cache.Upgrade(after)
	if n > 0 {
		r.logf("epoch cache: rewrote the metadata of %d cached epochs in kint's form", n)
	}
	if err != nil {
		r.warnf("epoch cache: rewriting earlier metadata in kint's form: %v", err)
	}
	if newest > after {
		if err := r.store.SetCacheCheckedTo(newest); err != nil {
			r.warnf("epoch cache: %v", err)
		}
	}
}

// Open opens the replica of the vault in opt.Home.
func Open(opt Options) (*Replica, error) {
	if opt.Vault == nil {
		return nil, homedir.ErrNoVault
	}
	if opt.Confirmations == 0 {
		opt.Confirmations = 2
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	dir, err := opt.Home.Ensure("db", opt.Vault.Space16())
	if err != nil {
		return nil, err
	}
	r := &Replica{opt: opt, vault: opt.Vault, cache: homedir.NewEpochCache(opt.Home, opt.Vault.Space16())}
	sources := &openSources{r: r}
	st, err := store.OpenStoreFrom(dir, sources.rows, sources.want)
	if err != nil {
		return nil, err
	}
	r.store = st
	st.SetModel(opt.Vault.Model)
	r.status.started = time.Now()
	r.upgradeCache()
	r.localRules = ignore.NewFile(opt.Home.Path(IgnoreFileName(opt.Vault)), func(err error) { r.warnf("local-only rules: %v", err) })
	// rows an interrupted push sent are sealing until its journal entry is settled
	if err = r.store.LoadSealing(); err != nil {
		st.Close()
		return nil, err
	}
	// a conflict copy moved or removed while unmounted is resolved
	if _, err = st.PruneConflicts(); err != nil {
		st.Close()
		return nil, err
	}
	sources.report()
	r.reportRepair(st.UncleanStart())
	r.setClient(opt.Client)
	if opt.DEK != ([32]byte{}) {
		if _, err := r.RebuildFromCache(); err != nil {
			r.warnf("%v; a pull will fetch from the chain instead", err)
		}
	}
	return r, nil
}

// SetVaultModel changes what the vault may anchor (vault.ModelKint or vault.ModelFull) and
// records it in vault.json, where the next mount finds it.
func (r *Replica) SetVaultModel(m string) error {
	r.pushMu.Lock() // vault.json is also written by a pull
	defer r.pushMu.Unlock()
	if err := SaveVaultModel(r.opt.Home, m); err != nil {
		return err
	}
	r.vault.Model = m
	r.store.SetModel(m)
	return nil
}

// SaveVaultModel records the vault model in home's vault.json, as it is on disk otherwise.
func SaveVaultModel(home homedir.Home, m string) error {
	if !store.ValidModel(m) || m == "" {
		return fmt.Errorf("%w: vault model %q: it is kint or full", vault.ErrInvalid, m)
	}
	v, err := home.LoadVault()
	if err != nil {
		return err
	}
	v.Model = m
	return home.SaveVault(v)
}

// IgnoreFileName is the per-vault file of local-only rules in KINT_HOME (gitignore syntax).
func IgnoreFileName(v *homedir.VaultConfig) string { return "kintfs-ignore-" + v.Space16() }

// LocalRule names the rule that keeps a new file at p (its path under the mount, as the mount
// names it: "state/x~", "entity/person/#x#") on this machine, never staged or anchored; ""
// when none does. The caller asks only for a name no row has: a rule never hides a row.
func (r *Replica) LocalRule(p string) string {
	if rule, ok := r.localRules.Match(p); ok {
		return rule.String()
	}
	return ""
}

// Vault is the vault configuration.
func (r *Replica) Vault() *homedir.VaultConfig { return r.vault }

// chainRef holds the chain connection for an atomic swap (nil Chain: offline).
type chainRef struct{ Chain }

func (r *Replica) setClient(c Chain) { r.client.Store(&chainRef{c}) }

// Client is the chain connection, nil when offline.
func (r *Replica) Client() Chain {
	if ref := r.client.Load(); ref != nil {
		return ref.Chain
	}
	return nil
}

// redialGap is the least time between two dials while offline.
const redialGap = 5 * time.Second

// connect returns the chain client, dialing it first when there is none yet.
func (r *Replica) connect(ctx context.Context) (Chain, error) {
	if c := r.Client(); c != nil || r.opt.Connect == nil {
		if c == nil {
			return nil, ErrOffline
		}
		return c, nil
	}
	r.dialMu.Lock()
	defer r.dialMu.Unlock()
	if c := r.Client(); c != nil {
		return c, nil
	}
	if time.Since(r.lastDial) < redialGap {
		return nil, r.offlineError(r.dialErr)
	}
	c, err := r.opt.Connect(ctx)
	if err != nil {
		r.lastDial, r.dialErr = time.Now(), err
		return nil, r.offlineError(err)
	}
	r.setClient(c)
	r.logf("connected to the chain")
	return c, nil
}

// offlineError says that the chain cannot be reached, naming the RPC (scheme and host only)
// once.
func (r *Replica) offlineError(err error) error {
	if errors.Is(err, chain.ErrUnreachable) {
		return err // already "cannot reach the RPC <scheme://host>: ..."
	}
	return fmt.Errorf("%w %s: %v", ErrOffline, chain.Endpoint(r.vault.RPC), err)
}

func (r *Replica) epochContext(seq uint64, prev [32]byte) seal.EpochContext {
	return seal.EpochContext{ChainID: r.vault.ChainID, Owner: r.vault.Owner, Space: r.vault.Space, Seq: seq, Prev: prev}
}

func (r *Replica) logf(format string, args ...any) { r.logAt(slog.LevelInfo, format, args) }

// debugf logs routine background steps, at Debug.
func (r *Replica) debugf(format string, args ...any) { r.logAt(slog.LevelDebug, format, args) }

// warnf logs a failure, at Warn, so a quiet log still shows it.
func (r *Replica) warnf(format string, args ...any) { r.logAt(slog.LevelWarn, format, args) }

// logAt logs one line at level, formatted only when the log takes that level.
func (r *Replica) logAt(level slog.Level, format string, args []any) {
	if ctx := context.Background(); r.opt.Log.Enabled(ctx, level) {
		r.opt.Log.Log(ctx, level, fmt.Sprintf(format, args...))
	}
}

// At is the read-only tree as anchored at or before block.
func (r *Replica) At(block uint64) vault.TreeReader { return r.store.At(block) }

// HistoryView is At, refused with vault.ErrHistoryIncomplete when this machine does not hold the
// versions the block's tree shows (Store.HistoryView).
func (r *Replica) HistoryView(block uint64) (vault.TreeReader, error) {
	h, err := r.store.HistoryView(block)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// RenderContent is the file content of a row: its body, or for a journal event the JSON
// object of its five fields.
func RenderContent(r *seal.Row) []byte { return store.RenderContent(r) }

// reportRepair says what the open found lost after a run that ended without closing the
// state database (a crash or a power cut), and what it rebuilt; it names no row.
func (r *Replica) reportRepair(rp store.Repair) {
	if !rp.Unclean {
		return
	}
	const lead = "a run ended without closing the state database"
	if rp.LostChanges > 0 {
		r.warnf("%s: %d changes not yet durable lost their content in a power cut and were undone (each of those files shows the change before it, or its anchored version, or is gone if it was new)", lead, rp.LostChanges)
	}
	if rp.Records > 0 {
		r.logf("%s: %d anchored records lost in a power cut were rebuilt from the epochs that anchored them", lead, rp.Records)
	}
	// what is left is looked for again at every start (see store.Repair)
	const left = "every start looks again, and one that opens the vault's key puts them back from their epochs (in the epoch cache, the push journal, or fetched from the chain when it is online), as does the next pull; else " + rebuildStateDB
	if rp.RecordsLeft > 0 {
		r.warnf("%s: %d versions in the history lost their records and could not be rebuilt here; they read as errors under @<block>: %s", lead, rp.RecordsLeft, left)
	}
	switch {
	case rp.BodiesErr != nil:
		r.warnf("%s, and checking its bodies failed: %v", lead, rp.BodiesErr)
	case len(rp.BodiesLeft) > 0:
		r.warnf("%s: %d anchored rows lost their bodies, %d put back from the epoch cache; %d could not be put back here and read as errors: %s", lead, rp.Bodies+len(rp.BodiesLeft), rp.Bodies, len(rp.BodiesLeft), left)
	case rp.Bodies > 0:
		r.logf("%s: %d anchored rows lost their bodies and were put back from the epoch cache", lead, rp.Bodies)
	}
}

// rebuildStateDB is the way out of what a power cut took and nothing here can put back.
const rebuildStateDB = "rebuild the state database (move KINT_HOME/db aside while kintfs is stopped)"

// refetchMissing fetches from the chain the epochs that the open after an unclean run wanted,
// for the history versions and bodies a power cut took, and could not have: an open offline,
// or one whose own fetch failed (see openSources). Each blob is checked as a pull checks it (the transaction the epoch's
// record names, a push of this vault, hashing to the recorded digest), cached, and what it
// carries put back (Store.RepairAgain). A pull, and so a mount as it starts, calls it before
// it walks the chain. A fetch that fails (a pruned node, an RPC down) is said and left to the
// next pull: old epochs never stop a pull from bringing the new ones.
func (r *Replica) refetchMissing(ctx context.Context, c Chain) error {
	missing := r.store.UncleanStart().Missing
	if len(missing) == 0 || r.opt.DEK == ([32]byte{}) {
		return nil
	}
	evs := make([]*chain.EpochEvent, len(missing))
	for i := range missing {
		evs[i] = r.epochEvent(&missing[i])
	}
	blobs, err := c.FetchBlobs(ctx, evs)
	if err != nil {
		r.warnf("a run ended without closing the state database: fetching the %d epochs that carry what it could not put back failed (%v); the next pull tries again; else %s",
			len(evs), err, rebuildStateDB)
		return nil
	}
	for i, b := range blobs {
		if err := r.cache.PutBlob(evs[i].Seq, b); err != nil {
			return fmt.Errorf("cache epoch %d: %w", evs[i].Seq, err)
		}
	}
	rp, err := r.store.RepairAgain(r.anchoredRows)
	if err != nil {
		return err
	}
	line := fmt.Sprintf("a run ended without closing the state database: %d epochs it wanted were fetched from the chain; %d anchored records and %d bodies put back",
		len(evs), rp.Records, rp.Bodies)
	if rp.RecordsLeft > 0 || len(rp.BodiesLeft) > 0 || rp.BodiesErr != nil {
		r.warnf("%s; %d history versions and %d bodies still could not be (%v): every start looks again; else %s",
			line, rp.RecordsLeft, len(rp.BodiesLeft), rp.BodiesErr, rebuildStateDB)
		return nil
	}
	r.logf("%s", line)
	return nil
}

// anchoredRows is the rows the anchored epoch info carries, from its blob in the epoch cache:
// the blob must hash to the digest the state database recorded for the epoch and open with the
// vault's key, so nothing is rebuilt other than as anchored.
func (r *Replica) anchoredRows(info *vault.EpochInfo, _ *store.PendingPush) ([]seal.Row, error) {
	if r.opt.DEK == ([32]byte{}) {
		return nil, errors.New("the vault's key is not open in this command")
	}
	blob, ok := r.cache.Blob(info.Seq, info.Digest)
	if !ok {
		return nil, fmt.Errorf("epoch %d is not in the epoch cache", info.Seq)
	}
	o, err := seal.Open(blob, r.opt.DEK, r.epochContext(info.Seq, info.Prev))
	if err != nil {
		return nil, fmt.Errorf("epoch %d in the epoch cache: %w", info.Seq, err)
	}
	return o.Plaintext.Rows, nil
}
