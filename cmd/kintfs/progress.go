package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"kintfs/replica"
)

// progressPrinter shows the steps of a long task: on a terminal one line, rewritten in place
// (epochs done of total, bytes, elapsed time, an estimate of the rest once one can be made);
// otherwise one line per epoch as it lands, and one per batch of epochs fetched.
type progressPrinter struct {
	w    io.Writer
	tty  bool
	mu   sync.Mutex
	last time.Time // the last rewrite of the terminal line
	open bool      // a terminal line is shown and not ended
	seen bool      // something was shown
	// held is the last step not drawn because it came too soon after the one before; end
	// draws it, so the line ends where the task did
	held *replica.Progress
}

// ttyRefresh is the least time between two rewrites of the terminal line.
const ttyRefresh = 100 * time.Millisecond

func newProgressPrinter(w io.Writer) *progressPrinter {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &progressPrinter{w: w, tty: tty}
}

func (p *progressPrinter) show(ev replica.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = true
	if !p.tty {
		fmt.Fprintln(p.w, progressLine(ev))
		return
	}
	final := ev.Phase == "landed" && ev.Total > 0 && ev.Done >= ev.Total
	if !final && time.Since(p.last) < ttyRefresh && p.open {
		p.held = &ev
		return
	}
	p.held = nil
	p.last = time.Now()
	fmt.Fprintf(p.w, "\r\x1b[K%s", progressSummary(ev))
	p.open = true
	if final {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

// end closes the terminal line, if one is open.
func (p *progressPrinter) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil && p.open {
		fmt.Fprintf(p.w, "\r\x1b[K%s", progressSummary(*p.held))
		p.held = nil
	}
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

// progressLine is one step as a line of its own.
func progressLine(ev replica.Progress) string {
	switch ev.Phase {
	case "fetched":
		return fmt.Sprintf("%s: fetched %s (%s, %s)", ev.Task, ofTotal(ev.Done, ev.Total), byteSize(ev.Bytes), elapsed(ev))
	case "sent":
		return fmt.Sprintf("%s: %s [%d sent, %s]", ev.Task, ev.Line, ev.Sent, elapsed(ev))
	}
	return fmt.Sprintf("%s: %s [%s, %s, %s]", ev.Task, ev.Line, ofTotal(ev.Done, ev.Total), byteSize(ev.Bytes), elapsed(ev))
}

// progressSummary is the terminal line: where the task stands.
func progressSummary(ev replica.Progress) string {
	verb := map[string]string{"pull": "applied", "push": "anchored", "compact": "anchored", "backfill": "recorded"}[ev.Task]
	if ev.Phase == "fetched" {
		verb = "fetched"
	}
	s := fmt.Sprintf("%s: %s %s, %s, %s", ev.Task, ofTotal(ev.Done, ev.Total), verb, byteSize(ev.Bytes), elapsed(ev))
	if ev.Sent > ev.Done {
		s += fmt.Sprintf(", %d sent", ev.Sent)
	}
	if ev.Total > 0 && ev.Done > 0 && ev.Done < ev.Total {
		took := time.Since(ev.Start)
		left := time.Duration(float64(took) / float64(ev.Done) * float64(ev.Total-ev.Done))
		s += fmt.Sprintf(", about %s left", left.Round(time.Second))
	}
	return s
}

func ofTotal(done, total int) string {
	if total > 0 {
		return fmt.Sprintf("%d/%d epochs", done, total)
	}
	return fmt.Sprintf("%d epochs", done)
}

func elapsed(ev replica.Progress) string {
	return time.Since(ev.Start).Round(100*time.Millisecond).String() + " elapsed"
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// withProgress asks the long task run under ctx to show its steps: streamed to the caller
// when the command runs inside a mount for another process, else printed to stderr here. The
// returned func ends the display.
func withProgress(ctx context.Context, cio *cmdIO) (context.Context, func()) {
	if cio.progress != nil {
		return replica.WithProgress(ctx, cio.progress), func() {}
	}
	p := newProgressPrinter(cio.err)
	return replica.WithProgress(ctx, p.show), p.end
}
