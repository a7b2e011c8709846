package replica

import (
	"errors"
	"kintfs/replica/vault"
	"testing"
)

// The backfill's state shows in .kint/status with the same text as when it was a string.
func TestBackfillStateText(t *testing.T) {
	var s backfillState
	steps := []struct {
		name  string
		next  func(backfillState) backfillState
		holes int
		want  string
	}{
		{"never ran, no holes", func(s backfillState) backfillState { return s }, 0, "done"},
		{"never ran, holes", func(s backfillState) backfillState { return s }, 2, "not started"},
		{"started", backfillState.start, 2, "running"},
		{"a pass", func(s backfillState) backfillState { return s.ended(&BackfillReport{Recorded: 3, Missing: 4}, nil) }, 2, "running: 3 recorded, 4 missing"},
		{"restart keeps counts", backfillState.start, 2, "running: 3 recorded, 4 missing"},
		{"skipped", func(s backfillState) backfillState {
			return s.ended(&BackfillReport{Missing: 5, Skipped: []vault.Gap{{Seq: 1, Reason: "x"}, {Seq: 7, Reason: "bad epoch"}}}, nil)
		}, 2, "stopped: epoch 7 cannot be recorded (bad epoch); 5 epochs missing"},
		{"restart keeps the stop", backfillState.start, 2, "stopped: epoch 7 cannot be recorded (bad epoch); 5 epochs missing"},
		{"error", func(s backfillState) backfillState { return s.ended(nil, errors.New("rpc down")) }, 2, "stopped: rpc down"},
		{"done", func(s backfillState) backfillState { return s.ended(&BackfillReport{Recorded: 9}, nil) }, 2, "done"},
		{"restart after done", backfillState.start, 0, "running"},
	}
	for _, st := range steps {
		s = st.next(s)
		if got := s.status(st.holes); got != st.want {
			t.Fatalf("%s: status %q, want %q", st.name, got, st.want)
		}
	}
	if s.phase != backfillRunning {
		t.Fatalf("phase %d, want running", s.phase)
	}
}
