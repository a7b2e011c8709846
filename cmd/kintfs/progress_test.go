package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"kintfs/replica"
)

// TestProgressPrinter: into a file (not a terminal) every epoch that lands is a line of its
// own, at once; on a terminal the line is rewritten in place and ends at the last epoch, with an
// estimate of the rest while there is one.
func TestProgressPrinter(t *testing.T) {
	var file bytes.Buffer
	p := &progressPrinter{w: &file}
	start := time.Now().Add(-2 * time.Second)
	p.show(replica.Progress{Task: "pull", Phase: "fetched", Done: 4, Total: 10, Bytes: 4000, Start: start})
	for i := 1; i <= 10; i++ {
		p.show(replica.Progress{Task: "pull", Phase: "landed", Done: i, Total: 10, Bytes: int64(1000 * i), Seq: uint64(i),
			Line: fmt.Sprintf("epoch %d applied (block %d)", i, 100+i), Start: start})
		if n := strings.Count(file.String(), "applied (block"); n != i {
			t.Fatalf("after epoch %d: %d lines:\n%s", i, n, file.String())
		}
	}
	p.end()
	if !strings.HasPrefix(file.String(), "pull: fetched 4/10 epochs (3.9 KB") || strings.Contains(file.String(), "\r") {
		t.Errorf("file output:\n%s", file.String())
	}

	var tty bytes.Buffer
	q := &progressPrinter{w: &tty, tty: true}
	q.show(replica.Progress{Task: "push", Phase: "landed", Done: 1, Total: 4, Bytes: 1 << 20, Seq: 7, Start: start})
	if out := tty.String(); !strings.HasPrefix(out, "\r\x1b[Kpush: 1/4 epochs anchored, 1.0 MB, ") || !strings.HasSuffix(out, " left") {
		t.Errorf("terminal line: %q", tty.String())
	}
	q.show(replica.Progress{Task: "push", Phase: "landed", Done: 4, Total: 4, Bytes: 4 << 20, Seq: 10, Start: start})
	q.end()
	if out := tty.String(); !strings.Contains(out, "\r\x1b[Kpush: 4/4 epochs anchored, 4.0 MB, ") || !strings.HasSuffix(out, " elapsed\n") || strings.Count(out, "\n") != 1 {
		t.Errorf("terminal output: %q", out)
	}
}

// TestProgressPrinterDrawsTheLastStep: on a terminal, a step that comes too soon after the
// one before is not drawn at once, but the line still ends at the last step (a push does not
// know its total, so no step is final until the task ends).
func TestProgressPrinterDrawsTheLastStep(t *testing.T) {
	var tty bytes.Buffer
	q := &progressPrinter{w: &tty, tty: true}
	start := time.Now()
	for i := 1; i <= 30; i++ {
		q.show(replica.Progress{Task: "push", Phase: "landed", Done: i, Bytes: int64(i) << 12, Seq: uint64(i), Start: start})
	}
	q.end()
	out := tty.String()
	if !strings.HasSuffix(out, "\n") || !strings.Contains(out[strings.LastIndex(out, "\r"):], "push: 30 epochs anchored") {
		t.Errorf("terminal output does not end at the last step: %q", out)
	}
}
