package replica

import "fmt"

// backfillPhase is where the history backfill stands; backfillState adds the counts the status
// tells with it. The status shows String(), the same text as always.
type backfillPhase uint8

const (
	backfillNone    backfillPhase = iota // no backfill ran since the mount started
	backfillRunning                      // one runs, or stopped with epochs still to fetch
	backfillStopped                      // it stopped on an error or on an epoch it cannot record
	backfillDone                         // every epoch is held here
)

type backfillState struct {
	phase    backfillPhase
	err      error  // backfillStopped on an error
	skipSeq  uint64 // backfillStopped on an epoch it cannot record: that epoch and why
	skipWhy  string
	recorded int // backfillRunning after a pass: epochs recorded and still missing
	missing  int
	counted  bool // recorded and missing are known
}

// start is a backfill starting: a stopped one keeps its reason until it ends.
func (s backfillState) start() backfillState {
	if s.phase == backfillNone || s.phase == backfillDone {
		return backfillState{phase: backfillRunning}
	}
	return s
}

// ended is how a backfill ended: its report or its error.
func (s backfillState) ended(rep *BackfillReport, err error) backfillState {
	switch {
	case err != nil:
		return backfillState{phase: backfillStopped, err: err}
	case rep.Missing == 0:
		return backfillState{phase: backfillDone}
	case len(rep.Skipped) > 0:
		g := rep.Skipped[len(rep.Skipped)-1]
		return backfillState{phase: backfillStopped, skipSeq: g.Seq, skipWhy: g.Reason, missing: rep.Missing, counted: true}
	default:
		return backfillState{phase: backfillRunning, recorded: rep.Recorded, missing: rep.Missing, counted: true}
	}
}

// status is the state as .kint/status shows it; holes tells a mount where no backfill ran
// whether there is history to fetch.
func (s backfillState) status(holes int) string {
	switch s.phase {
	case backfillRunning:
		if s.counted {
			return fmt.Sprintf("running: %d recorded, %d missing", s.recorded, s.missing)
		}
		return "running"
	case backfillStopped:
		if s.err != nil {
			return "stopped: " + s.err.Error()
		}
		return fmt.Sprintf("stopped: epoch %d cannot be recorded (%s); %d epochs missing", s.skipSeq, s.skipWhy, s.missing)
	case backfillDone:
		return "done"
	}
	if holes == 0 {
		return "done"
	}
	return "not started"
}
