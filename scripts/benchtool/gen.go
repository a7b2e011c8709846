package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// words is the vocabulary of generated bodies: text-like, so it compresses like notes do.
var words = strings.Fields(`memory vault epoch anchor chain session owner tenant entity state
reference journal category key body status meta leaf digest block seq bucket row flush pull push
mirror head cache blob snapshot replica mount kernel inode page file directory fsync durable
staged sealed verified encrypted compressed calldata gas floor token note task project meeting
deadline alpha beta gamma delta lambda sigma omega river mountain forest ocean desert city
village market garden library museum theatre station harbour bridge tower castle`)

// Needle is the word grep looks for: it appears in one row of every -needle-every.
const Needle = "zanzibarquill"

// genBody is a compact JSON object of about size bytes, the same for the same (id, variant).
func genBody(id string, variant, size int, needle bool) []byte {
	seed := uint64(variant)*1_000_003 + 7
	for _, c := range id {
		seed = seed*131 + uint64(c)
	}
	rng := rand.New(rand.NewPCG(seed, 0x6b696e74))
	var text strings.Builder
	if needle {
		text.WriteString(Needle + " ")
	}
	obj := map[string]any{"id": id, "v": variant, "n": rng.IntN(1 << 30), "tags": []string{words[rng.IntN(len(words))], words[rng.IntN(len(words))]}}
	base, _ := json.Marshal(obj)
	for len(base)+text.Len()+12 < size {
		text.WriteString(words[rng.IntN(len(words))])
		text.WriteByte(' ')
	}
	obj["text"] = strings.TrimSpace(text.String())
	b, _ := json.Marshal(obj)
	return b
}

func cmdGen(args []string) error {
	fl := flag.NewFlagSet("gen", flag.ExitOnError)
	dir := fl.String("dir", "", "where the category directories go (e.g. MNT/entity)")
	cats := fl.Int("cats", 100, "categories")
	keys := fl.Int("keys", 100, "keys per category")
	size := fl.Int("size", 1024, "approximate body bytes")
	variant := fl.Int("variant", 1, "changes every body when changed")
	prefix := fl.String("prefix", "c", "category name prefix")
	needleEvery := fl.Int("needle-every", 100, "one row in this many holds the needle word (0: none)")
	flushEvery := fl.Int("flush-every", 0, "write flush to -ctl after this many rows (0: never)")
	ctl := fl.String("ctl", "", "the mount's .kint/ctl")
	fsync := fl.Bool("fsync", false, "fsync every file")
	maxSeconds := fl.Float64("max-seconds", 0, "stop writing (after a last flush) once this much time has passed (0: no bound)")
	fl.Parse(args)
	if *dir == "" {
		return fmt.Errorf("-dir is required")
	}
	start := time.Now()
	var flushTime time.Duration
	flushes, files, bytes := 0, 0, 0
	flush := func() error {
		t := time.Now()
		if err := os.WriteFile(*ctl, []byte("flush\n"), 0); err != nil {
			return fmt.Errorf("flush after %d rows: %w", files, err)
		}
		flushTime += time.Since(t)
		flushes++
		return nil
	}
	deadline := time.Time{}
	if *maxSeconds > 0 {
		deadline = start.Add(time.Duration(*maxSeconds * float64(time.Second)))
	}
	stopped := false
rows:
	for c := 0; c < *cats; c++ {
		cat := fmt.Sprintf("%s%03d", *prefix, c)
		cdir := filepath.Join(*dir, cat)
		if err := os.MkdirAll(cdir, 0o755); err != nil {
			return err
		}
		for k := 0; k < *keys; k++ {
			key := fmt.Sprintf("k%03d", k)
			n := c**keys + k
			body := genBody(cat+"/"+key, *variant, *size, *needleEvery > 0 && n%*needleEvery == 0)
			if err := writeFile(filepath.Join(cdir, key), body, *fsync); err != nil {
				return err
			}
			files++
			bytes += len(body)
			if *flushEvery > 0 && files%*flushEvery == 0 {
				if err := flush(); err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "\r  %d rows written, %d flushes (%.0fs)   ", files, flushes, time.Since(start).Seconds())
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				stopped = true
				break rows
			}
		}
	}
	if *flushEvery > 0 && files%*flushEvery != 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	if *flushEvery > 0 {
		fmt.Fprintln(os.Stderr)
	}
	total := time.Since(start)
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"files": files, "bytes": bytes, "seconds": total.Seconds(),
		"write_seconds": (total - flushTime).Seconds(), "flush_seconds": flushTime.Seconds(), "flushes": flushes,
		"stopped_by_time_bound": stopped,
	})
}

// writeFile creates path with data, fsyncing it first when asked; the close is checked, since
// on the mount the close is what makes the row durable.
func writeFile(path string, data []byte, fsync bool) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if fsync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// cmdCopy copies a tree file by file, as cp -r does, with an fsync per file when asked.
func cmdCopy(args []string) error {
	fl := flag.NewFlagSet("copy", flag.ExitOnError)
	src := fl.String("src", "", "source directory")
	dst := fl.String("dst", "", "destination directory (created)")
	fsync := fl.Bool("fsync", false, "fsync every file before closing it")
	fl.Parse(args)
	start := time.Now()
	files := 0
	err := filepath.WalkDir(*src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(*src, p)
		out := filepath.Join(*dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		return writeFile(out, b, *fsync)
	})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"files": files, "seconds": time.Since(start).Seconds()})
}
