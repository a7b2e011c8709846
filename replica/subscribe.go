package replica

import (
	"context"
	"fmt"
	"time"
)

// Subscription wakes the mount for each new Epoch event of the vault, until it fails. It is
// only a wake-up: the pull it starts reads and checks everything from the RPC.
type Subscription interface {
	Blocks() <-chan uint64 // the block of a new Epoch event
	Err() <-chan error     // the one error that ends it
	Close()
}

// subscribeTimeout bounds one attempt to dial and subscribe.
const subscribeTimeout = 20 * time.Second

// noteLive records how the mount hears of other machines' epochs, for .kint/status.
func (s *statusState) noteLive(text string) {
	s.mu.Lock()
	s.live = text
	s.mu.Unlock()
}

// liveStatus is the live field of the status: the subscription, or why the mount polls.
func (r *Replica) liveStatus() string {
	w := r.worker
	r.status.mu.Lock()
	defer r.status.mu.Unlock()
	switch {
	case w == nil:
		return "not mounted: no background poll"
	case r.status.live != "":
		return r.status.live
	case w.o.Subscribe == nil:
		return fmt.Sprintf("polling every %s (no websocket: KINT_WS_URL or a ws:// RPC URL subscribes)", w.o.Poll)
	}
	return fmt.Sprintf("polling every %s: subscribing to %s", w.o.Poll, w.o.LiveName)
}

// live keeps a subscription to the vault's Epoch logs and wakes the worker to pull for each
// event. When it cannot subscribe, or the subscription fails, the worker's poll is all there
// is; the subscription is tried again once per poll interval.
func (w *worker) live() {
	defer close(w.liveDone)
	lost := false // the last attempt failed, and the status says so
	for first := true; ; first = false {
		sub, err := w.subscribe()
		if err != nil {
			// the log line first: whoever reads the status then finds it written
			if !lost {
				w.r.warnf("live: cannot subscribe to %s (%v); polling every %s", w.o.LiveName, err, w.o.Poll)
			}
			w.r.status.noteLive(fmt.Sprintf("polling every %s: websocket subscription to %s failed at %s: %v; trying again every %s",
				w.o.Poll, w.o.LiveName, stamp(time.Now()), err, w.o.Poll))
			lost = true
		} else {
			w.r.logf("live: subscribed to the vault's Epoch logs at %s", w.o.LiveName)
			w.r.status.noteLive("websocket: subscribed to the vault's Epoch logs at " + w.o.LiveName + " since " + stamp(time.Now()))
			if lost || !first {
				w.wakePull(0) // events while the socket was down were missed: catch up once
			}
			lost = false
			err = w.follow(sub)
			sub.Close()
			if err == nil {
				return // stopped
			}
			lost = true
			w.r.warnf("live: websocket subscription lost (%v); polling every %s", err, w.o.Poll)
			w.r.status.noteLive(fmt.Sprintf("polling every %s: websocket subscription to %s lost at %s: %v; trying again every %s",
				w.o.Poll, w.o.LiveName, stamp(time.Now()), err, w.o.Poll))
		}
		t := time.NewTimer(w.o.Poll)
		select {
		case <-w.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// subscribe makes one attempt, cancelled by a stop.
func (w *worker) subscribe() (Subscription, error) {
	ctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
	defer cancel()
	go func() {
		select {
		case <-w.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return w.o.Subscribe(ctx)
}

// follow wakes the worker for each event until the subscription fails (its error) or the
// worker stops (nil).
func (w *worker) follow(sub Subscription) error {
	for {
		select {
		case <-w.stop:
			return nil
		case b := <-sub.Blocks():
			w.wakePull(b)
		case err := <-sub.Err():
			if err == nil {
				err = fmt.Errorf("the subscription ended")
			}
			return err
		}
	}
}

// wakePull asks the worker for a pull; one already asked for covers this one too.
func (w *worker) wakePull(block uint64) {
	select {
	case w.liveKick <- block:
	default:
	}
}

// livePull is the pull an event starts.
func (w *worker) livePull(block uint64) {
	if block > 0 {
		w.r.logf("live: an Epoch event in block %d; pulling", block)
	}
	_ = w.attempt(func(ctx context.Context) error {
		_, err := w.r.Pull(ctx, false)
		return err
	})
}
