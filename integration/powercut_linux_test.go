package integration

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"kintfs/integration/powercut"
)

// requirePowerCut fails a test loudly in CI when a power cut cannot be simulated here, and
// skips it loudly elsewhere.
func requirePowerCut(t *testing.T) {
	t.Helper()
	requireFUSE(t)
	if err := powercut.Available(); err != nil {
		msg := fmt.Sprintf("POWER CUTS CANNOT BE SIMULATED HERE (%v): this test did NOT run", err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// TestPowerCutDuringWrites cuts the power under KINT_HOME while four scripts write files
// through the mount at once (their closes share syncs), a fifth file is held open, created and
// written but never closed, and a sixth is written, fsynced and written on, never closed.
// KINT_HOME is on an ext4 file system on a disk whose writes since its last cache flush are
// lost or kept page by page at random (powercut): unlike a SIGKILL, which the kernel's page
// cache survives, this loses whatever the mount did not sync. The next trial starts the
// machine from the image the cut left: every file whose close had returned is there with its
// content, the others are whole, empty or absent, the unclosed file is absent or empty, never
// half there, and the fsynced one holds what its fsync covered. What survived anchors at the
// end. KINTFS_POWERCUT_TRIALS (3) and KINTFS_POWERCUT_SEED change the trials and the seed of
// the cut and its moment.
func TestPowerCutDuringWrites(t *testing.T) {
	requirePowerCut(t)
	const writers, files = 4, 120
	trials := envCount("KINTFS_POWERCUT_TRIALS", 3)
	rng := powerCutRNG(t)

	m, home, dir := powerCutMachine(t, "powercut", rng)
	work := t.TempDir()

	acked, kept := 0, 0
	for trial := 1; ; trial++ {
		mt := m.mountAt(dir)
		if trial > 1 {
			a, k := checkAfterCut(t, mt, trial-1, writers, files, work)
			acked, kept = acked+a, kept+k
		}
		if trial > trials {
			// what survived the cuts anchors like anything else
			mt.mustCtl("flush")
			if st := mt.mustStatus(); st.StagedRows != 0 || len(st.Held) != 0 {
				t.Errorf("after the final flush: %d rows staged, held %v", st.StagedRows, st.Held)
			}
			mt.unmount()
			break
		}

		var scripts []*exec.Cmd
		for w := 1; w <= writers; w++ {
			script := exec.Command("sh", "-c", crashWriter)
			script.Env = append(os.Environ(), "PAD="+strconv.Itoa(powerCutPadOf(trial*10+w)), "N="+strconv.Itoa(files), "T="+strconv.Itoa(trial*10+w), "MNT="+dir,
				"ACK="+ackPath(work, trial, w))
			if err := script.Start(); err != nil {
				t.Fatal(err)
			}
			scripts = append(scripts, script)
		}
		// opened after the last process this trial starts: a child's close-on-exec of its
		// copy would flush it
		unclosed, err := os.OpenFile(mt.path(fmt.Sprintf("state/unclosed-%d", trial)), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := unclosed.WriteString("half of a file"); err != nil {
			t.Fatal(err)
		}
		// and one made durable by fsync, then written on without one, never closed
		synced, err := os.OpenFile(mt.path(fmt.Sprintf("state/fsynced-%d", trial)), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := synced.WriteString(fsyncedContent); err != nil {
			t.Fatal(err)
		}
		if err := synced.Sync(); err != nil {
			t.Fatal(err)
		}
		if _, err := synced.WriteString(" and more, never synced"); err != nil {
			t.Fatal(err)
		}

		// cut once a random share of the files is written, a few milliseconds into the next
		target := files/10 + rng.Intn(files*6/10)
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			least := files
			for w := 1; w <= writers; w++ {
				least = min(least, countLines(ackPath(work, trial, w)))
			}
			if least >= target {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.Intn(15)) * time.Millisecond)
		// the acknowledgements read before the cut are of closes that returned before it
		for w := 1; w <= writers; w++ {
			if err := copyFile(ackPath(work, trial, w), ackPath(work, trial, w)+".before-cut"); err != nil {
				t.Fatal(err)
			}
		}
		// odd trials cut while the disk flushes its cache (a sync of the mount's, or of the
		// file system's journal), even ones at once
		t.Logf("trial %d: %s", trial, home.cut(mt, trial%2 == 1))
		unclosed.Close()
		synced.Close()
		for _, s := range scripts {
			if err := s.Wait(); err != nil {
				t.Fatalf("writer script: %v", err)
			}
		}
	}
	home.requireCachedInSync()
	t.Logf("%d trials: %d writes acknowledged, none lost; %d unacknowledged kept whole; the cuts in a sync found %d pages in the disk's cache",
		trials, acked, kept, home.cachedInSync)
	recordFigure(t, "power cuts x writers x files", "%d x %d x %d", trials, writers, files)
	recordFigure(t, "writes acknowledged before a power cut / lost", "%d / 0", acked)
}

// powerCutPad is the pad of the power-cut tests' files: over a kilobyte, as most rows are. The
// store keeps such a body in pieces in badger's memtable log (replica/store/pieces.go), and in
// its value log the bodies of the files of powerCutLargePad, which half the writers write: a
// durable close of those must sync the value log before the memtable's, and a pull the same
// for every row.
const (
	powerCutPad      = 1200
	powerCutLargePad = 6000
)

// powerCutPadOf is the pad of writer's files.
func powerCutPadOf(writer int) int {
	if writer%2 == 0 {
		return powerCutLargePad
	}
	return powerCutPad
}

func powerCutContent(writer, i int) string {
	return crashContentPadded(writer, i, powerCutPadOf(writer))
}

// powerCutRNG is the random source of a power-cut test: seeded from KINTFS_POWERCUT_SEED,
// or from the clock, and the seed logged to run it again.
func powerCutRNG(t *testing.T) *rand.Rand {
	seed := int64(envCount("KINTFS_POWERCUT_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("seed %d (KINTFS_POWERCUT_SEED)", seed)
	return rand.New(rand.NewSource(seed))
}

// powerCutMachine is a machine on a new dev chain with its vault made and its KINT_HOME on a
// powercut disk, everything so far synced, and a directory to mount it at.
func powerCutMachine(t *testing.T, tenant string, rng *rand.Rand) (*machine, *powerCutHome, string) {
	m := newMachine(t, startDevchain(t), tenant)
	home := newPowerCutHome(t, m, rng)
	m.connect(tenant + " passphrase")
	home.settle(m)
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return m, home, dir
}

// powerCutHome is a machine's KINT_HOME on ext4 on a powercut disk, mounted at the same path
// whatever image the machine runs from.
type powerCutHome struct {
	t   *testing.T
	rng *rand.Rand
	vol string // where the volume is mounted
	v   *powercut.Volume
	// pages that the cuts made in a sync found in the disk's cache: none means those cuts
	// tested nothing a kill does not
	cachedInSync int
}

// newPowerCutHome makes a new file system on a new disk of 256 MB and puts m's KINT_HOME on it.
func newPowerCutHome(t *testing.T, m *machine, rng *rand.Rand) *powerCutHome {
	h := &powerCutHome{t: t, rng: rng, vol: filepath.Join(t.TempDir(), "vol")}
	if err := os.Mkdir(h.vol, 0o755); err != nil {
		t.Fatal(err)
	}
	image, err := powercut.Empty(256 << 20)
	if err != nil {
		t.Fatal(err)
	}
	h.open(image, true)
	m.home = filepath.Join(h.vol, "home")
	return h
}

func (h *powerCutHome) open(image []byte, mkfs bool) {
	v, err := powercut.OpenVolume(image, h.t.TempDir(), h.vol, mkfs)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { v.Close() })
	h.v = v
}

// settle makes what the machine wrote so far durable (syncfs), as a machine that was running
// for a while has it: the cuts then take only what the test does next.
func (h *powerCutHome) settle(m *machine) {
	if out, err := exec.Command("sync", "-f", m.home).CombinedOutput(); err != nil {
		h.t.Fatalf("sync %s: %v: %s", m.home, err, out)
	}
}

// cut cuts the power, while the disk flushes its cache (inSync: at the next sync that finds
// writes there, or at once if none comes within 10 s) or at once; the mount goes with it. The
// machine is then back on, from the image the cut left. It says what the cut did.
func (h *powerCutHome) cut(mt *mounted, inSync bool) string {
	skip := -1
	if inSync {
		skip = 0
	}
	return h.cutAnd(mt.kill, skip)
}

// cutAnd is cut with kill ending the machine's processes after the cut, and the cut made in
// the sync after skip others that found writes in the cache (at once for a skip below 0).
func (h *powerCutHome) cutAnd(kill func(), skip int) string {
	inSync := skip >= 0
	var image []byte
	var kept, lost int
	when := "at once"
	if inSync {
		var err error
		when = "in a sync"
		if image, kept, lost, err = h.v.Disk.CutInSync(powercut.AtRandom(h.rng), skip, 10*time.Second); err != nil {
			when = "at once (" + err.Error() + ")"
			image, kept, lost = h.v.Disk.Cut(powercut.AtRandom(h.rng))
		} else {
			h.cachedInSync += kept + lost
		}
	} else {
		image, kept, lost = h.v.Disk.Cut(powercut.AtRandom(h.rng))
	}
	syncs := h.v.Disk.Syncs()
	kill()
	if err := h.v.Close(); err != nil {
		h.t.Fatal(err)
	}
	h.open(image, false)
	return fmt.Sprintf("power cut %s, keeping %d and losing %d pages written to the disk since its last flush (%d flushes)", when, kept, lost, syncs)
}

func (h *powerCutHome) requireCachedInSync() {
	if h.cachedInSync == 0 {
		h.t.Fatalf("no cut in a sync found a write in the disk's cache: the cuts tested nothing a kill does not")
	}
}

// TestPowerCutDuringPush is TestCrashDuringPush with the power cut under KINT_HOME instead of
// a kill: at the stages where a call of the flush is held at the proxy (the transaction not yet
// sent; sent, its receipt awaited) the cut is at once, at the random moments it comes while
// the disk flushes its cache. A push journal entry, an epoch cache file or a mirror update
// that was not durable when the epoch went out would show as an epoch sealed twice, a row
// lost or a fork.
func TestPowerCutDuringPush(t *testing.T) {
	requirePowerCut(t)
	rng := powerCutRNG(t)
	var home *powerCutHome
	crashDuringPush(t, rng, "powercut-push", "power cuts", func(m *machine) {
		home = newPowerCutHome(t, m, rng)
	}, func(mt *mounted, stage pushStage) string {
		return home.cut(mt, stage.hold == "")
	})
	home.requireCachedInSync()
}

// TestPowerCutDuringPull cuts the power under the KINT_HOME of a machine pulling a vault of
// a few hundred epochs of 1.2 KB rows (their bodies in badger's value log), while the disk
// flushes its cache, three times, then lets a pull finish. The machine then shows every row
// as the writer wrote it: an epoch applied before a cut is there whole, with its bodies, or
// pulled again, never a row whose body is empty or another's.
func TestPowerCutDuringPull(t *testing.T) {
	requirePowerCut(t)
	rng := powerCutRNG(t)
	const rows = 400
	dc := startDevchain(t)
	writer := newMachine(t, dc, "powercut-pull")
	writer.connect("power cut pull passphrase")
	mw := writer.mount()
	for i := 0; i < rows; i++ {
		writeFile(t, mw.path(fmt.Sprintf("state/r%03d", i)), crashContentPadded(0, i, powerCutPad))
	}
	mw.mustCtl("flush")
	head := chainHead(t, dc.client(t), writer)
	mw.unmount()

	reader := newMachine(t, dc, "powercut-pull")
	home := newPowerCutHome(t, reader, rng)
	reader.mustRun("power cut pull passphrase\n", "init", "--owner", reader.owner(), "--passphrase-stdin")
	home.settle(reader)
	for cut := 1; cut <= 3; cut++ {
		pull := exec.Command(kintfsBin, "pull")
		pull.Env = reader.env()
		var out strings.Builder
		pull.Stdout, pull.Stderr = &out, &out
		if err := pull.Start(); err != nil {
			t.Fatal(err)
		}
		// in one of the pull's syncs, from the opening of the store to the end of the pull;
		// the first cut early enough to come in a sync whatever the pull's length
		skip := rng.Intn(30)
		if cut == 1 {
			skip = rng.Intn(5)
		}
		t.Logf("cut %d, in the sync after %d others: %s", cut, skip, home.cutAnd(func() {
			pull.Process.Kill()
			pull.Wait()
		}, skip))
	}
	if rep := reader.pull(); rep.Mirror.Seq != head.Seq {
		t.Fatalf("the pull after the cuts: mirror at seq %d, the chain at %d", rep.Mirror.Seq, head.Seq)
	}
	mr := reader.mount()
	for i := 0; i < rows; i++ {
		if got, want := readFile(t, mr.path(fmt.Sprintf("state/r%03d", i))), crashContentPadded(0, i, powerCutPad); got != want {
			t.Fatalf("row %d after the cuts reads %.60q (%d bytes), want %.60q", i, got, len(got), want)
		}
	}
	mr.checkNoPanic()
	home.requireCachedInSync()
	t.Logf("%d epochs, %d rows pulled whole after 3 power cuts during the pull", head.Seq, rows)
}

// saveWriter is an editor's atomic save, over and over: version i written to doc.new, then
// renamed over doc; i is logged to ACK once the rename returned.
const saveWriter = `
i=0
while [ $i -lt $N ]; do
  i=$((i+1))
  printf '{"version":%d,"pad":"%s"}' $i "$(printf "%0${PAD}d" 0 | tr 0 $((i%10)))" > "$MNT/state/doc.new" || exit 1
  mv "$MNT/state/doc.new" "$MNT/state/doc" || exit 1
  echo $i >> "$ACK"
done
`

func savedVersion(i int) string {
	return fmt.Sprintf(`{"version":%d,"pad":"%s"}`, i, strings.Repeat(strconv.Itoa(i%10), powerCutPad))
}

// TestPowerCutDuringSaves cuts the power under KINT_HOME while a script saves one file the way
// editors do (write a new file, rename it over the old), three times, in a sync and at once.
// After each cut the file holds, whole, the version the last acknowledged rename put there or a
// later one, never an older one, a mix or nothing.
func TestPowerCutDuringSaves(t *testing.T) {
	requirePowerCut(t)
	rng := powerCutRNG(t)
	const saves = 400
	m, home, dir := powerCutMachine(t, "powercut-saves", rng)
	work := t.TempDir()
	for trial := 1; trial <= 3; trial++ {
		mt := m.mountAt(dir)
		ack := filepath.Join(work, fmt.Sprintf("ack-%d", trial))
		script := exec.Command("sh", "-c", saveWriter)
		script.Env = append(os.Environ(), "PAD="+strconv.Itoa(powerCutPad), "N="+strconv.Itoa(saves), "MNT="+dir, "ACK="+ack)
		if err := script.Start(); err != nil {
			t.Fatal(err)
		}
		target := saves/10 + rng.Intn(saves/2)
		deadline := time.Now().Add(2 * time.Minute)
		for countLines(ack) < target && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		acked := countLines(ack) // renames that returned before the cut
		t.Logf("trial %d, %d saves acknowledged: %s", trial, acked, home.cut(mt, trial%2 == 1))
		script.Wait() // it fails once the mount is gone
		if acked == 0 {
			t.Fatalf("trial %d: no save was acknowledged before the cut", trial)
		}

		mt = m.mountAt(dir)
		got, err := readFileErr(mt.path("state/doc"))
		var v int
		if err == nil {
			_, err = fmt.Sscanf(got, `{"version":%d,`, &v)
		}
		switch {
		case err != nil:
			t.Fatalf("trial %d: after the cut the saved file reads %.60q: %v (version %d was acknowledged)", trial, got, err, acked)
		case v < acked:
			t.Fatalf("trial %d: after the cut the saved file holds version %d, older than version %d acknowledged", trial, v, acked)
		case got != savedVersion(v):
			t.Fatalf("trial %d: after the cut version %d of the saved file is not whole: %.80q (%d bytes)", trial, v, got, len(got))
		}
		t.Logf("trial %d: the file holds version %d (%d acknowledged)", trial, v, acked)
		mt.checkNoPanic()
		if err := os.Remove(mt.path("state/doc")); err != nil {
			t.Fatal(err)
		}
		os.Remove(mt.path("state/doc.new"))
		mt.unmount()
	}
	home.requireCachedInSync()
}

func ackPath(work string, trial, writer int) string {
	return filepath.Join(work, fmt.Sprintf("ack-%d-%d", trial, writer))
}

// checkAfterCut checks the files of a trial on the mount started from the image its cut left:
// those acknowledged before the cut there with their content, the others whole, empty or
// absent, the unclosed file absent or empty. It returns the number acknowledged, and the
// number not acknowledged that were kept whole.
func checkAfterCut(t *testing.T, mt *mounted, trial, writers, files int, work string) (acked, kept int) {
	t.Helper()
	for w := 1; w <= writers; w++ {
		got := ackedSet(t, ackPath(work, trial, w)+".before-cut")
		acked += len(got)
		writer := trial*10 + w
		kept += checkWriterFiles(t, mt, writer, files, got, func(i int) string { return powerCutContent(writer, i) }, "power cut")
	}
	checkUnclosed(t, mt, "state", fmt.Sprintf("unclosed-%d", trial), "power cut")
	// what the fsync returned for is there, and what followed it is there whole or not at all
	if got := readFile(t, mt.path(fmt.Sprintf("state/fsynced-%d", trial))); got != fsyncedContent && got != fsyncedContent+" and more, never synced" {
		t.Fatalf("trial %d: the file fsynced and left open reads %q after the power cut, want %q", trial, got, fsyncedContent)
	}
	t.Logf("trial %d: %d writes acknowledged before the cut, none lost; %d unacknowledged kept whole", trial, acked, kept)
	mt.checkNoPanic()
	return acked, kept
}

// fsyncedContent is what TestPowerCutDuringWrites makes durable with fsync in a file it never
// closes.
const fsyncedContent = `{"durable":"by fsync, the file still open"}`

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}
