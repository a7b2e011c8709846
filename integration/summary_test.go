package integration

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
)

// The reliability and security tests record their figures here as they go; the run ends with
// one table of them (printReliabilitySummary, called from TestMain). The file is per test
// process, so concurrent runs do not mix their figures.
var summaryPath = filepath.Join(os.TempDir(), fmt.Sprintf("kintfs-reliability-summary-%d.txt", os.Getpid()))

var summaryMu sync.Mutex

// recordFigure appends one figure of test t to the summary file.
func recordFigure(t *testing.T, figure string, format string, args ...any) {
	t.Helper()
	value := fmt.Sprintf(format, args...)
	t.Logf("%s: %s", figure, value)
	summaryMu.Lock()
	defer summaryMu.Unlock()
	f, err := os.OpenFile(summaryPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Errorf("summary: %v", err)
		return
	}
	defer f.Close()
	clean := func(s string) string { return strings.NewReplacer("\t", " ", "\n", " ").Replace(s) }
	fmt.Fprintf(f, "%s\t%s\t%s\n", clean(t.Name()), clean(figure), clean(value))
}

// printReliabilitySummary prints the figures recorded in this run as one table, then removes
// the file. It prints nothing when no reliability test ran.
func printReliabilitySummary() {
	summaryMu.Lock()
	defer summaryMu.Unlock()
	f, err := os.Open(summaryPath)
	if err != nil {
		return
	}
	defer os.Remove(summaryPath)
	defer f.Close()
	type row struct{ test, figure, value string }
	var rows []row
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "\t", 3)
		if len(parts) == 3 {
			rows = append(rows, row{parts[0], parts[1], parts[2]})
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Println()
	fmt.Println("kintfs reliability and security summary")
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "TEST\tFIGURE\tVALUE")
	last := ""
	for _, r := range rows {
		name := r.test
		if name == last {
			name = ""
		}
		last = r.test
		fmt.Fprintf(w, "%s\t%s\t%s\n", name, r.figure, r.value)
	}
	w.Flush()
}
