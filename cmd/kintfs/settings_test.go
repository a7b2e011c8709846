package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSettingsPrecedence reads each setting of the table from the environment, from its fstab
// key (mount.kintfs and mount -o) and from its flag, and checks who wins: the flag over fstab
// and -o, those over the environment, the environment over the default.
func TestSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	for _, s := range settingsTable {
		t.Run(s.env, func(t *testing.T) {
			none := loadSettings(func(string) (string, bool) { return "", false })
			if got := none.get(s.env); got != s.def {
				t.Errorf("unset: %q, want the default %q", got, s.def)
			}
			env := loadSettings(func(k string) (string, bool) { return map[string]string{s.env: "from-env"}[k], k == s.env })
			if got := env.get(s.env); got != "from-env" {
				t.Errorf("environment: %q", got)
			}
			if s.help == "" {
				t.Error("no help")
			}
			if s.fstab != "" {
				val, want := "/from-fstab", "/from-fstab"
				if s.file {
					val = filepath.Join(dir, s.fstab)
					if err := os.WriteFile(val, []byte(" /from-fstab \n"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				opt := s.fstab + "=" + val
				if s.fstab != "home" {
					opt = "home=/var/lib/kint," + opt
				}
				m, err := parseFstabIn(env, []string{"dev", "/mnt/kint", "-o", opt})
				if err != nil {
					t.Fatal(err)
				}
				if got := env.with(envMap(m.env)).get(s.env); got != want {
					t.Errorf("fstab %s over the environment: %q, want %q", s.fstab, got, want)
				}
				over, err := applyMountOpts(commandFlags(commands["mount"]), []string{s.fstab + "=" + val})
				if err != nil {
					t.Fatal(err)
				}
				if got := env.with(over).get(s.env); got != want {
					t.Errorf("-o %s over the environment: %q, want %q", s.fstab, got, want)
				}
				if got := env.with(over).environ(); len(got) != 1 || got[0] != s.env+"="+want {
					t.Errorf("-o %s passed on to a daemon's child as %q", s.fstab, got)
				}
			}
			if s.flag != "" {
				c := commandWithFlag(s.flag)
				if c == nil {
					t.Fatalf("no command has --%s", s.flag)
				}
				if c.name != "init" {
					return // a number the engine resolves: 0 (not given) is the setting
				}
				for _, given := range []bool{false, true} {
					fl := commandFlags(c)
					var argv []string
					if given {
						argv = []string{"--" + s.flag + "=from-flag"}
					}
					if err := fl.Parse(argv); err != nil {
						t.Fatal(err)
					}
					var v string
					if given {
						v, _ = fl.GetString(s.flag)
					}
					settingFlags(fl, env.with(map[string]string{s.env: "from-fstab"}), map[string]*string{s.env: &v})
					if want := map[bool]string{false: "from-fstab", true: "from-flag"}[given]; v != want {
						t.Errorf("--%s given %v: %q, want %q", s.flag, given, v, want)
					}
				}
			}
		})
	}
}

// commandWithFlag is init when it has the flag, else a command that has it.
func commandWithFlag(name string) *command {
	if commandFlags(commands["init"]).Lookup(name) != nil {
		return commands["init"]
	}
	for _, c := range commands {
		if commandFlags(c).Lookup(name) != nil {
			return c
		}
	}
	return nil
}

// TestSettingDefaults: the numbers the mount falls back to are the table's, read as numbers.
func TestSettingDefaults(t *testing.T) {
	var none settings
	if got := none.duration("KINT_QUIET_SECONDS"); got.Seconds() != 300 {
		t.Errorf("quiet period %v", got)
	}
	if got := none.positive("KINT_SIZE_TRIGGER_BYTES"); got != 32768 {
		t.Errorf("size trigger %d", got)
	}
	if got := none.positive("KINT_CONFIRMATIONS"); got != 2 {
		t.Errorf("confirmations %d", got)
	}
	if got := none.duration("KINT_KEY_TTL"); got.Hours() != 24 {
		t.Errorf("key TTL %v", got)
	}
	bad := none.with(map[string]string{"KINT_QUIET_SECONDS": "soon", "KINT_CONFIRMATIONS": "-1"})
	if bad.duration("KINT_QUIET_SECONDS").Seconds() != 300 || bad.positive("KINT_CONFIRMATIONS") != 2 {
		t.Error("a value that is not a number is not the default")
	}
	if got := none.with(map[string]string{"KINT_QUIET_SECONDS": "1.5"}).duration("KINT_QUIET_SECONDS"); got.Milliseconds() != 1500 {
		t.Errorf("1.5 s read as %v", got)
	}
}

// TestNoProcessWideEnvironmentChange: no production file of the module changes the process's
// environment (os.Setenv, os.Unsetenv, os.Clearenv): settings are read once and passed down.
// scripts/ sets the environment of the processes it starts, which is theirs.
func TestNoProcessWideEnvironmentChange(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "scripts" || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" && (sel.Sel.Name == "Setenv" || sel.Sel.Name == "Unsetenv" || sel.Sel.Name == "Clearenv") {
				t.Errorf("%s: os.%s", path, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadmeNamesEverySetting: the README's configuration names each setting of the table,
// and every KINT_ variable it names is one.
func TestReadmeNamesEverySetting(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	known := map[string]bool{}
	for _, s := range settingsTable {
		known[s.env] = true
		if !strings.Contains(readme, s.env) {
			t.Errorf("README does not name %s", s.env)
		}
	}
	for _, w := range regexp.MustCompile("`(KINTFS?_[A-Z0-9_]+)").FindAllStringSubmatch(readme, -1) {
		if !known[w[1]] {
			t.Errorf("README names %s, which is no setting of the table", w[1])
		}
	}
}

// productionFiles parses the non-test Go files of dir.
func productionFiles(t *testing.T, dir string) map[string]*ast.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = f
	}
	if len(files) == 0 {
		t.Fatalf("no production Go file in %s", dir)
	}
	return files
}

// TestNoHiddenInputs: a command's I/O and settings reach it as its *cmdIO, never as a value
// of its context (no context.WithValue in cmd/kintfs), and a home's local settings come with
// the Home: homedir has no exported setter of its own and no package-level variable but its
// sentinel errors, so nothing in it is set for the whole process.
func TestNoHiddenInputs(t *testing.T) {
	for path, f := range productionFiles(t, ".") {
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "context" && sel.Sel.Name == "WithValue" {
					t.Errorf("%s: context.WithValue carries an input the command should be given", path)
				}
			}
			return true
		})
	}
	for path, f := range productionFiles(t, filepath.Join("..", "..", "replica", "homedir")) {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() && strings.HasPrefix(d.Name.Name, "Set") {
					t.Errorf("%s: homedir.%s is a process-wide setter", path, d.Name.Name)
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i >= len(vs.Values) || !isErrorValue(vs.Values[i]) {
							t.Errorf("%s: package-level variable %s is state every home would share", path, name.Name)
						}
					}
				}
			}
		}
	}
}

// isErrorValue: e is errors.New(...) or fmt.Errorf(...), a sentinel error.
func isErrorValue(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && (id.Name == "errors" && sel.Sel.Name == "New" || id.Name == "fmt" && sel.Sel.Name == "Errorf")
}

// TestMaxCachedFiles: KINTFS_MAX_CACHED_FILES reaches the mount as a bound, 0 as none, and a
// value that is not a positive whole number as the default.
func TestMaxCachedFiles(t *testing.T) {
	for given, want := range map[string]int{"": 20000, "0": -1, "500": 500, "many": 20000, "-3": 20000} {
		if got := maxCachedFiles(settingsGiving("KINTFS_MAX_CACHED_FILES", given)); got != want {
			t.Errorf("KINTFS_MAX_CACHED_FILES=%q: %d, want %d", given, got, want)
		}
	}
}

// TestTimeRequests: KINTFS_TIME_REQUESTS=1 turns the mount's count of its requests on; unset,
// 0 or anything else leaves it off.
func TestTimeRequests(t *testing.T) {
	for given, want := range map[string]bool{"": false, "1": true, "0": false, "yes": false} {
		if got := timeRequests(settingsGiving("KINTFS_TIME_REQUESTS", given)); got != want {
			t.Errorf("KINTFS_TIME_REQUESTS=%q: %v, want %v", given, got, want)
		}
	}
}

// settingsGiving is the settings of an environment that gives env the value given, and
// nothing else ("" leaves env unset too).
func settingsGiving(env, given string) settings {
	return loadSettings(func(name string) (string, bool) {
		if name == env && given != "" {
			return given, true
		}
		return "", false
	})
}
