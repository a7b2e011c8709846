package replica

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"kintfs/chain"
	"kintfs/replica/vault"
)

// WorkerOptions configure the background write-back and poll.
type WorkerOptions struct {
	Quiet       time.Duration // KINT_QUIET_SECONDS: flush after this long without a change
	SizeTrigger int64         // KINT_SIZE_TRIGGER_BYTES: flush at once past this many staged bytes
	Poll        time.Duration // how often the chain head is read
	OpTimeout   time.Duration // each flush or pull attempt runs under its own deadline
	// BackfillAfter is how long after the start the background backfill of history under a
	// snapshot begins (KINT_BACKFILL_START_SECONDS; negative: never); it then records
	// backfillBatch epochs every backfillEvery until history is complete.
	BackfillAfter time.Duration
	// Subscribe, when set, subscribes to the vault's Epoch logs (a websocket); each event
	// starts a pull at once, and the poll stays as the fallback. LiveName names it in status.
	Subscribe func(ctx context.Context) (Subscription, error)
	LiveName  string
}

// The background backfill's rate: a batch of epochs, then a pause, so that flushes and ctl
// commands, which wait for the same lock, are never held up for long.
const (
	backfillBatch = 16
	backfillEvery = 250 * time.Millisecond
)

// worker seals and anchors staged rows after a quiet period and polls the head. FUSE requests
// never wait on it; only a ctl command does, by choice.
type worker struct {
	r    *Replica
	o    WorkerOptions
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
	// exit is the deadline of the flush StopWorker makes, set before stop closes: a flush
	// running then goes on until it ends or exit does (see attemptFlush).
	exit  context.Context
	retry time.Duration
	// liveKick carries a subscription's wake-ups; liveDone closes when its goroutine ends
	liveKick chan uint64
	liveDone chan struct{}
}

// Commands are the ctl commands, in the order .kint/ctl lists them.
// no-flush tells the mount to anchor nothing when it stops (staged rows stay staged for the
// next mount); flush-on-exit undoes it.
var Commands = []string{"flush", "flush dry-run", "pull", "pull full", "compact", "refresh", "no-flush", "flush-on-exit"}

// ParseCommand normalises a ctl command: surrounding white space and a trailing newline are
// ignored, inner runs of spaces fold to one.
func ParseCommand(s string) (string, error) {
	cmd := strings.Join(strings.Fields(s), " ")
	for _, c := range Commands {
		if cmd == c {
			return cmd, nil
		}
	}
	if len(cmd) > 24 { // the error echoes what was written: keep it short
		cmd = cmd[:24] + "..."
	}
	return "", fmt.Errorf("%w: unknown command %q (one of: %s)", vault.ErrInvalid, cmd, strings.Join(Commands, ", "))
}

// NoExitFlush reports whether StopWorker will anchor nothing (ctl no-flush).
func (r *Replica) NoExitFlush() bool { return r.noExitFlush.Load() }

// Control runs one ctl command and returns when it is done.
func (r *Replica) Control(ctx context.Context, command string) error {
	cmd, err := ParseCommand(command)
	if err != nil {
		return err
	}
	switch cmd {
	case "flush":
		return r.Flush(ctx)
	case "flush dry-run":
		// what the next flush would anchor and cost, in last_dry_run of .kint/status
		_, err = r.Push(ctx, PushOptions{DryRun: true})
		if errors.Is(err, ErrNothingToPush) {
			err = nil
		}
	case "pull":
		_, err = r.Pull(ctx, false)
	case "pull full":
		_, err = r.Pull(ctx, true)
	case "compact":
		_, err = r.Push(ctx, PushOptions{Snapshot: true})
	case "refresh":
		err = r.poll(ctx)
	case "no-flush":
		r.noExitFlush.Store(true)
	case "flush-on-exit":
		r.noExitFlush.Store(false)
	}
	return err
}

// Flush anchors what is staged, pulling first when the chain moved; nothing to push is done.
func (r *Replica) Flush(ctx context.Context) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	head, moved, err := r.pollHead(ctx)
	if err != nil {
		return err
	}
	opt := PushOptions{}
	if !moved {
		opt.knownHead = &head // just read: the push does not read it again
	}
	rep, err := r.Push(ctx, opt)
	if errors.Is(err, ErrChainMoved) {
		// another machine pushed between the poll and the push: rebase once more
		if _, err := r.Pull(ctx, false); err != nil {
			return err
		}
		rep, err = r.Push(ctx, PushOptions{})
	}
	r.noteHeld(rep)
	if errors.Is(err, ErrNothingToPush) {
		return nil
	}
	return err
}

// poll reads the head and pulls when it moved.
func (r *Replica) poll(ctx context.Context) error {
	_, _, err := r.pollHead(ctx)
	return err
}

// pollHead is poll, returning the head it read and whether it pulled.
func (r *Replica) pollHead(ctx context.Context) (chain.Head, bool, error) {
	c, err := r.connect(ctx)
	if err != nil {
		r.notePoll(err)
		return chain.Head{}, false, err
	}
	head, err := c.Head(ctx, r.vault.Owner, r.vault.Space)
	if err != nil {
		err = fmt.Errorf("read head: %w", err)
	}
	r.notePoll(err)
	if err != nil {
		return head, false, err
	}
	mirror, err := r.MirrorHead()
	if err != nil {
		return head, false, err
	}
	if head.Seq == mirror.Seq && head.Digest == mirror.Digest {
		r.debugf("poll: head at seq %d, nothing new", head.Seq)
		return head, false, nil
	}
	r.logf("poll: the chain moved to seq %d (this machine is at %d); pulling", head.Seq, mirror.Seq)
	_, err = r.Pull(ctx, false)
	return head, true, err
}

// noteHeld logs, once per change, that staged rows are held: how many and in which tiers,
// never their keys or why (a reason may quote the body); .kint/status names them.
func (r *Replica) noteHeld(rep *PushReport) {
	if rep == nil {
		return
	}
	n := int64(len(rep.Held))
	if old := r.heldLogged.Swap(n); n > old {
		tiers := map[string]int{}
		for _, h := range rep.Held {
			tiers[h.Tier]++
		}
		r.warnf("held: %d staged rows cannot be anchored and stay staged (by tier: %v); see held in .kint/status", n, tiers)
	}
}

// notePoll records a poll in the status, and logs the moments the chain is lost and found.
func (r *Replica) notePoll(err error) {
	if err != nil && !Offline(err) {
		r.status.notePoll(nil) // the RPC answered: a refusal is not a lost connection
		return
	}
	switch off, back := r.status.notePoll(err); {
	case off:
		r.warnf("offline: %v; changes stay staged, trying again at each poll", err)
	case back:
		r.logf("online again: the chain answers")
	}
}

// StartWorker starts the background write-back and poll.
func (r *Replica) StartWorker(o WorkerOptions) {
	if o.Quiet <= 0 {
		o.Quiet = 300 * time.Second
	}
	if o.SizeTrigger <= 0 {
		o.SizeTrigger = 32768
	}
	if o.Poll <= 0 {
		o.Poll = 30 * time.Second
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = 5 * time.Minute
	}
	w := &worker{r: r, o: o, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		liveKick: make(chan uint64, 1), liveDone: make(chan struct{})}
	r.worker = w
	r.store.OnStage(func() {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	})
	go w.run()
	if o.Subscribe != nil {
		go w.live()
	} else {
		close(w.liveDone)
	}
}

// StopWorker stops the worker and makes one last, bounded attempt to anchor what is staged,
// unless the ctl command no-flush said not to.
func (r *Replica) StopWorker(ctx context.Context) error {
	w := r.worker
	if w == nil {
		return nil
	}
	w.once.Do(func() {
		w.exit = ctx
		if r.noExitFlush.Load() {
			w.exit = canceled // no-flush: a flush running stops at once
		}
		close(w.stop)
	})
	<-w.done
	<-w.liveDone
	if r.Client() == nil || r.opt.ReadOnly || r.noExitFlush.Load() {
		return nil
	}
	st, err := r.Status()
	if err != nil || st.StagedRows+st.StagedDels == len(st.Held) {
		return err
	}
	return r.Flush(ctx)
}

func (w *worker) run() {
	defer close(w.done)
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	if st, err := w.r.Status(); err == nil && st.StagedRows+st.StagedDels > len(st.Held) && !w.r.opt.ReadOnly {
		quiet.Reset(w.o.Quiet) // staged before a restart: the marker is the staged rows themselves
		w.noteNext(w.o.Quiet, "quiet period (rows staged before the restart)")
	}
	poll := time.NewTicker(w.o.Poll)
	defer poll.Stop()
	backfill := time.NewTimer(w.o.BackfillAfter)
	if w.o.BackfillAfter < 0 {
		backfill.Stop()
	}
	defer backfill.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-backfill.C:
			if w.backfillStep() {
				backfill.Reset(backfillEvery)
			} else {
				backfill.Reset(max(w.o.Poll, time.Second)) // done, offline or stopped: look again later
			}
		case <-w.kick:
			// only what can be anchored counts: a held row waits for a new version
			if n := w.r.store.Anchorable(); n >= w.o.SizeTrigger {
				quiet.Reset(0)
				w.noteNext(0, fmt.Sprintf("size trigger (%d bytes staged, at least %d)", n, w.o.SizeTrigger))
			} else {
				quiet.Reset(w.o.Quiet)
				w.noteNext(w.o.Quiet, fmt.Sprintf("quiet period (%s after the last change; at once past %d staged bytes, %d now)", w.o.Quiet, w.o.SizeTrigger, n))
			}
		case <-quiet.C:
			if err := w.attemptFlush(); err != nil {
				d := w.backoff()
				quiet.Reset(d)
				w.noteNext(d, "retry after a failed flush")
			} else {
				w.retry = 0
				w.noteNext(-1, "")
			}
		case <-poll.C:
			_ = w.attempt(w.r.poll)
		case b := <-w.liveKick:
			w.livePull(b)
		}
	}
}

// backfillStep records one batch of history under a snapshot; it reports whether more is to
// be done at once.
func (w *worker) backfillStep() bool {
	holes, err := w.r.store.HistoryHoles()
	if err != nil || len(holes) == 0 || w.r.Client() == nil {
		return false
	}
	var rep *BackfillReport
	err = w.attempt(func(ctx context.Context) error {
		var err error
		rep, err = w.r.Backfill(ctx, BackfillOptions{Max: backfillBatch})
		return err
	})
	if err != nil || rep == nil {
		return false
	}
	if rep.Missing == 0 {
		w.r.logf("history: complete from the first epoch")
	}
	return rep.Recorded > 0 && rep.Missing > 0
}

// canceled is a context that is done already.
var canceled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// attempt runs one operation under its own deadline, logging a failure; the worker's stop
// cancels it.
func (w *worker) attempt(op func(context.Context) error) error { return w.runOp(op, false) }

// attemptFlush is attempt for a flush, which the worker's stop does not cancel: it goes on
// under the deadline of the flush StopWorker makes, unless no-flush was asked. Cancelled, its
// epochs already sent would wait in the push journal, and the flush on unmount would settle
// them one at a time, a block each, before it could send anything else.
func (w *worker) attemptFlush() error { return w.runOp(w.r.Flush, true) }

func (w *worker) runOp(op func(context.Context) error, finishOnStop bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), w.o.OpTimeout)
	defer cancel()
	go func() {
		select {
		case <-w.stop:
			if finishOnStop {
				select {
				case <-w.exit.Done():
				case <-ctx.Done():
				}
			}
			cancel()
		case <-ctx.Done():
		}
	}()
	err := op(ctx)
	if err != nil && !Offline(err) { // going offline is logged once, by the poll
		w.r.warnf("background: %v", err)
	}
	return err
}

// noteNext records when the next automatic flush runs (in d; negative: none due) and why.
func (w *worker) noteNext(d time.Duration, why string) {
	if d < 0 {
		w.r.status.noteNextFlush(time.Time{}, "")
		return
	}
	w.r.status.noteNextFlush(time.Now().Add(d), why)
}

// backoff doubles the retry delay from 5 s up to 5 minutes.
func (w *worker) backoff() time.Duration {
	if w.retry == 0 {
		w.retry = 5 * time.Second
	} else if w.retry *= 2; w.retry > 5*time.Minute {
		w.retry = 5 * time.Minute
	}
	return w.retry
}
