package main

import (
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"kintfs/fs"
)

// setting is one of kintfs's settings: the environment variable it is read from, the fstab
// and mount -o option that gives it instead (which wins over the environment), the flag that
// wins over both, its default and its help.
type setting struct {
	env   string
	fstab string // "" for none
	file  bool   // the fstab option names a file whose content (trimmed) is the value
	flag  string // "" for none; the command whose flag it is says so in flagOf
	def   string // "" for unset
	help  string
}

// settingsTable is every setting kintfs reads, in one place: each default is said here once.
// The fstab options come first, in the order mount -o lists them.
var settingsTable = []setting{
	{env: "KINT_HOME", fstab: "home", help: "the state directory (default ~/.kint)"},
	{env: "KINT_TENANT", fstab: "tenant", flag: "tenant", help: "the tenant"},
	{env: "KINT_RPC_URL", fstab: "rpc", flag: "rpc", help: "the JSON-RPC URL of the vault's chain"},
	{env: "KINT_CONTRACT", fstab: "contract", flag: "contract", help: "the EpochAnchor address"},
	{env: "KINT_QUIET_SECONDS", fstab: "quiet", def: "300", help: "seconds without a change before the staged rows are anchored"},
	{env: "KINT_SIZE_TRIGGER_BYTES", fstab: "size_trigger", def: "32768", help: "staged bytes that anchor without waiting for the quiet period"},
	{env: "KINT_SESSION_PASSPHRASE", fstab: "session_passphrase_file", file: true, help: "the local passphrase the cached keys are sealed under"},
	{env: "KINT_NO_KEYCHAIN", help: "1: keep the macOS Keychain out (local.secret holds the local passphrase)"},
	{env: "KINT_KEY_TTL", def: "24h", help: "how long a cached key stays valid (a Go duration or seconds)"},
	{env: "KINT_WS_URL", help: "the websocket a mount subscribes on (default the RPC URL when it is ws:// or wss://)"},
	{env: "KINT_RPC_URL_2", help: "a second, independent RPC for a cold start and for calldata the primary pruned"},
	{env: "KINT_ALLOW_SINGLE_RPC", help: "1: accept a cold start with one RPC"},
	{env: "KINT_BLOCK_TIME", help: "seconds between blocks, which paces receipt polls (default the chain's own)"},
	{env: "KINT_MAX_GAS_PRICE_GWEI", help: "the highest gas price a push is sent at, in gwei (unset: no cap)"},
	{env: "KINT_CONFIRMATIONS", flag: "confirmations", def: "2", help: "blocks to wait for after each transaction"},
	{env: "KINT_BACKFILL_START_SECONDS", def: "2", help: "seconds after a mount starts before history is fetched"},
	{env: "KINT_OFFLINE", help: "1: init and recovery without a chain"},
	{env: "KINT_OWNER_KEY", help: "the owner's private key (hex), for authorize and revoke"},
	{env: "KINT_PASSPHRASE", help: "the vault passphrase, for mount --dev"},
	{env: "KINTFS_MAX_CACHED_FILES", def: strconv.Itoa(fs.DefaultMaxCachedFiles), help: "files a mount keeps in memory while the kernel caches their names; past it, idle files are dropped from the kernel's cache and looked up again when used (0: no bound)"},
	{env: "KINTFS_CPUPROFILE", help: "write a CPU profile of the mount to this file"},
	{env: "KINTFS_MEMPROFILE", help: "write a heap profile of the mount to this file when it stops"},
	{env: "KINTFS_TIME_REQUESTS", help: "1: count the FUSE requests a mount answers and its own time on each kind, in .kint/requests"},
}

// settingOf is the table's entry for env; it panics on a name not in the table, a mistake
// in kintfs itself.
func settingOf(env string) setting {
	for _, s := range settingsTable {
		if s.env == env {
			return s
		}
	}
	panic("kintfs: no setting " + env)
}

// settings are the values of the table, read once from the environment by main, with what
// fstab and mount -o give on top. The zero value has every default.
type settings struct {
	vals map[string]string // by environment variable; "" is unset
	over map[string]string // given by fstab or -o: passed on to a daemon's child
}

// loadSettings reads every setting of the table from lookup (os.LookupEnv in main).
func loadSettings(lookup func(string) (string, bool)) settings {
	s := settings{vals: map[string]string{}}
	for _, t := range settingsTable {
		if v, ok := lookup(t.env); ok {
			s.vals[t.env] = v
		}
	}
	return s
}

// envSettings are the settings of this process's environment.
func envSettings() settings { return loadSettings(os.LookupEnv) }

// with is s with the KEY=VALUE entries of kv (an fstab line's or -o's options) on top.
func (s settings) with(kv map[string]string) settings {
	n := settings{vals: map[string]string{}, over: map[string]string{}}
	for k, v := range s.vals {
		n.vals[k] = v
	}
	for k, v := range s.over {
		n.over[k] = v
	}
	for k, v := range kv {
		settingOf(k)
		n.vals[k], n.over[k] = v, v
	}
	return n
}

// get is a setting's value as given, else its default.
func (s settings) get(env string) string {
	if v := s.vals[env]; v != "" {
		return v
	}
	return settingOf(env).def
}

// given is a setting's value as given ("" when unset), without the default.
func (s settings) given(env string) string {
	settingOf(env)
	return s.vals[env]
}

// duration is a setting in seconds (decimals allowed) or as a Go duration; a value that is
// neither is the default.
func (s settings) duration(env string) time.Duration {
	if d, ok := parseSeconds(s.given(env)); ok {
		return d
	}
	d, _ := parseSeconds(settingOf(env).def)
	return d
}

func parseSeconds(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
		return time.Duration(f * float64(time.Second)), true
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d, true
	}
	return 0, false
}

// positive is a setting as a positive whole number; anything else is the default.
func (s settings) positive(env string) int64 {
	if n, err := strconv.ParseInt(s.given(env), 10, 64); err == nil && n > 0 {
		return n
	}
	n, _ := strconv.ParseInt(settingOf(env).def, 10, 64)
	return n
}

// on reports whether a switch setting is 1.
func (s settings) on(env string) bool { return s.given(env) == "1" }

// environ is what fstab or -o gave, as KEY=VALUE for a child's environment.
func (s settings) environ() []string {
	var kv []string
	for k, v := range s.over {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return kv
}

// settingFlags fills each flag of fl that was not given with its setting (by environment
// variable, in dst): a flag given wins over fstab, -o and the environment.
func settingFlags(fl *pflag.FlagSet, set settings, dst map[string]*string) {
	for env, p := range dst {
		if !fl.Changed(settingOf(env).flag) {
			*p = set.given(env)
		}
	}
}
