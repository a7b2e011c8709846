package main

import (
	"strings"
	"testing"
)

// The flush's step says what a new file cost on its disk as it began, beside the floors' figure
// from the run's start, and says nothing of it when the step did not measure it.
func TestEngineSaysWhatANewFileCost(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir, map[string]string{
		"floors.json":   `{"roundtrip_us":14,"create_us":10.9}`,
		"flushown.json": `{"rows":10000,"epochs":667,"seconds":1.7,"cpu_seconds":2.5,"policy":"low","create_us_before":162.4}`,
	})
	rp := &report{}
	text := strings.Join(rp.engineSections(results{dir}), "\n")
	want := "A new empty file cost 162.4 µs to create on that disk as `flushown` began, against 10.9 µs when the run began (floors):"
	if !strings.Contains(text, want) {
		t.Errorf("the flush's step has no %q:\n%s", want, text)
	}

	writeResults(t, dir, map[string]string{"flushown.json": `{"rows":10000,"epochs":667,"seconds":1.7}`})
	if text := strings.Join((&report{}).engineSections(results{dir}), "\n"); strings.Contains(text, "new empty file") {
		t.Errorf("a step that did not measure a new file's cost says one:\n%s", text)
	}
}
