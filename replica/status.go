package replica

import (
	"encoding/json"
	"kintfs/chain"
	"kintfs/replica/vault"
	"sync"
	"time"
)

// statusState is what .kint/status reports beyond the database: the last push, pull and poll.
type statusState struct {
	mu           sync.Mutex
	started      time.Time
	lastPush     *opStatus
	lastPull     *opStatus
	lastDryRun   *opStatus
	lastPoll     time.Time
	offlineSince time.Time
	offlineWhy   string
	backfill     backfillState
	live         string // "" until the subscription was first tried
	nextFlush    time.Time
	nextWhy      string // why the next automatic flush runs then; "" when none is due
}

// noteNextFlush records when the worker's next automatic flush runs and why (zero: none due).
func (s *statusState) noteNextFlush(at time.Time, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextFlush, s.nextWhy = at, why
}

// noteBackfillStart records that a backfill runs, so that the status does not call history
// done before the block times of what it recorded are in.
func (s *statusState) noteBackfillStart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.backfill = s.backfill.start()
}

// noteBackfill records how the last backfill ended.
func (s *statusState) noteBackfill(rep *BackfillReport, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.backfill = s.backfill.ended(rep, err)
}

// OpStatus is the last push or pull as the status tells it.
type OpStatus = opStatus

type opStatus struct {
	At     string `json:"at"`
	Error  string `json:"error,omitempty"`
	Report any    `json:"report,omitempty"`
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func (s *statusState) notePush(rep *PushReport, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := &opStatus{At: stamp(time.Now()), Report: rep}
	if err != nil {
		o.Error = err.Error()
	}
	s.lastPush = o
}

func (s *statusState) noteDryRun(rep *PushReport, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := &opStatus{At: stamp(time.Now()), Report: rep}
	if err != nil {
		o.Error = err.Error()
	}
	s.lastDryRun = o
}

func (s *statusState) notePull(rep *PullReport, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := &opStatus{At: stamp(time.Now()), Report: rep}
	if err != nil {
		o.Error = err.Error()
	}
	s.lastPull = o
}

// notePoll records a poll of the head; err non-nil means the RPC could not be reached. It
// reports a change: went offline, or came back.
func (s *statusState) notePoll(err error) (wentOffline, backOnline bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastPoll = time.Now()
	if err == nil {
		backOnline = !s.offlineSince.IsZero()
		s.offlineSince, s.offlineWhy = time.Time{}, ""
		return false, backOnline
	}
	if s.offlineSince.IsZero() {
		s.offlineSince = time.Now()
		wentOffline = true
	}
	s.offlineWhy = err.Error()
	return wentOffline, false
}

// Status is the JSON of .kint/status and kintfs status. Every field is always present, with
// one JSON type: lists are lists (never null), counts and ages are integers, times are
// RFC 3339 strings or "" when they have not happened, last_push and last_pull are an object
// or null. The README has the schema; a test checks it in every state.
type Status struct {
	Owner        string           `json:"owner"`
	Tenant       string           `json:"tenant"`
	Space        string           `json:"space"`
	Chain        ChainInfo        `json:"chain"`
	Head         vault.Head       `json:"head"`
	Mirror       vault.Head       `json:"mirror"`
	ReadOnly     bool             `json:"read_only"`
	Pushing      bool             `json:"pushing"`
	LastPoll     string           `json:"last_poll"`
	Offline      string           `json:"offline"`
	StagedRows   int              `json:"staged_rows"`
	StagedDels   int              `json:"staged_deletions"`
	StagedBytes  int64            `json:"staged_bytes"`
	OldestStaged int64            `json:"oldest_staged_age_seconds"`
	Held         []vault.HeldRow  `json:"held"`
	LocalFiles   int              `json:"local_files"` // kept on this machine, never anchored (dotfiles, local-only rules)
	Conflicts    []vault.Conflict `json:"conflicts"`
	Gaps         []vault.Gap      `json:"gaps"`
	PendingPush  []uint64         `json:"pending_push"`
	LastPush     *opStatus        `json:"last_push"`
	LastPull     *opStatus        `json:"last_pull"`
	// LastDryRun is the last dry run's report (push --dry-run, ctl flush dry-run): what the
	// next flush would anchor and cost. BucketPolicy is how pushes choose the bucket.
	LastDryRun   *opStatus `json:"last_dry_run"`
	BucketPolicy string    `json:"bucket_policy"`
	// HistoryFrom is the oldest epoch from which this machine holds every version (@<block>
	// before its block answers ENODATA); Backfill says how filling in the rest goes.
	HistoryFrom vault.Head `json:"history_from"`
	Backfill    string     `json:"backfill"`
	// Live says how other machines' epochs are heard of: a websocket subscription, or the
	// poll and why.
	Live string `json:"live"`
	// NextFlush says when the next automatic flush runs and why (the quiet period, the size
	// trigger, a retry); "" when none is due.
	NextFlush string `json:"next_flush"`
	// VaultModel is what the vault may anchor: "kint" (what kint's store can hold) or "full";
	// KintIncompatible lists the rows anchored in shapes kint's store cannot hold.
	VaultModel       string         `json:"vault_model"`
	KintIncompatible []Incompatible `json:"kint_incompatible"`
}

// Incompatible is a row anchored in a shape kint's store cannot hold: its path under the
// mount and why.
type Incompatible struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// KintIncompatible lists the rows anchored in shapes kint's store cannot hold, by path.
func (r *Replica) KintIncompatible() []Incompatible {
	out := []Incompatible{}
	for _, x := range r.store.KintIncompatible() {
		k := vault.Key{Tier: x.Tier, Key: x.Key}.InCategory(x.Category)
		out = append(out, Incompatible{Path: r.rowPath(k), Reason: x.Reason})
	}
	return out
}

// rowPath is the path of k under the mount (Options.RowPath), or its tier and key.
func (r *Replica) rowPath(k vault.Key) string {
	if r.opt.RowPath != nil {
		return r.opt.RowPath(k)
	}
	if k.HasCategory {
		return k.Tier + "/" + k.Category + "/" + k.Key
	}
	return k.Tier + "/" + k.Key
}

// ChainInfo names the chain the vault lives on.
type ChainInfo struct {
	ChainID  uint64 `json:"chain_id"`
	RPC      string `json:"rpc"`
	Contract string `json:"contract"`
}

// Status gathers the replica's status.
func (r *Replica) Status() (*Status, error) {
	st := &Status{Owner: r.vault.Owner.Hex(), Tenant: r.vault.Tenant, Space: r.vault.Space.Hex(),
		Chain: ChainInfo{ChainID: r.vault.ChainID, RPC: r.vault.RPC, Contract: r.vault.Contract.Hex()}}
	sum, err := r.store.Summary()
	if err != nil {
		return nil, err
	}
	st.Head, st.Mirror, st.HistoryFrom = sum.Seen, sum.Mirror, sum.HistoryFrom
	st.Conflicts, st.Gaps, st.PendingPush, st.Held = sum.Conflicts, sum.Gaps, sum.PendingPush, sum.Held
	st.StagedRows, st.StagedDels, st.StagedBytes = sum.StagedRows, sum.StagedDels, sum.StagedBytes
	st.LocalFiles = sum.LocalFiles
	if !sum.OldestStaged.IsZero() {
		st.OldestStaged = int64(time.Since(sum.OldestStaged) / time.Second)
	}
	// a record stored as JSON null (an emptied list) decodes to nil: still a list
	if st.Conflicts == nil {
		st.Conflicts = []vault.Conflict{}
	}
	if st.Gaps == nil {
		st.Gaps = []vault.Gap{}
	}
	if st.PendingPush == nil {
		st.PendingPush = []uint64{}
	}
	st.Live = r.liveStatus()
	st.VaultModel = r.store.Model()
	st.KintIncompatible = r.KintIncompatible()
	r.status.mu.Lock()
	if r.status.nextWhy != "" && st.StagedRows+st.StagedDels > len(st.Held) {
		st.NextFlush = stamp(r.status.nextFlush) + ": " + r.status.nextWhy
	}
	r.status.mu.Unlock()
	st.ReadOnly = r.opt.ReadOnly
	st.Pushing = r.pushing.Load()
	st.BucketPolicy = r.BucketPolicy()
	r.status.mu.Lock()
	st.LastPush, st.LastPull, st.LastDryRun = r.status.lastPush, r.status.lastPull, r.status.lastDryRun
	st.Backfill = r.status.backfill.status(sum.Holes)
	st.LastPoll = stamp(r.status.lastPoll)
	if st.LastPoll == "" && !r.status.offlineSince.IsZero() {
		st.LastPoll = stamp(r.status.offlineSince)
	}
	if !r.status.offlineSince.IsZero() {
		st.Offline = "offline since " + stamp(r.status.offlineSince) + ": " + r.status.offlineWhy
	} else if r.Client() == nil {
		st.Offline = "offline: cannot reach the RPC " + chain.Endpoint(r.vault.RPC)
	}
	r.status.mu.Unlock()
	return st, nil
}

// StatusJSON is .kint/status.
func (r *Replica) StatusJSON() []byte {
	st, err := r.Status()
	if err != nil {
		b, _ := json.Marshal(map[string]string{"error": err.Error()})
		return append(b, '\n')
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	return append(b, '\n')
}
