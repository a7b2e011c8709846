package fs

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestParallelWritersAndListers runs writers, readers and listers at once (run with -race).
func TestParallelWritersAndListers(t *testing.T) {
	tm := mountForTest(t)
	const workers, rounds = 6, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*2)
	for w := 0; w < workers; w++ {
		wg.Add(2)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				p := tm.path("state", fmt.Sprintf("w%d", w))
				body := strings.Repeat(fmt.Sprintf("%d.%d ", w, i), 50)
				if err := os.WriteFile(p, []byte(body), 0644); err != nil {
					errs <- err
					return
				}
				got, err := os.ReadFile(p)
				if err != nil || string(got) != body {
					errs <- fmt.Errorf("w%d round %d read %d bytes, %v", w, i, len(got), err)
					return
				}
			}
		}(w)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				if _, err := os.ReadDir(tm.path("state")); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := lsNames(t, tm.path("state")); len(got) != workers {
		t.Fatalf("state lists %q", got)
	}
}
