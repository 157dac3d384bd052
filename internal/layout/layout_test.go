package layout

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/scanner"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/memstream/memstream"

// maxCmdLines bounds cmd/memstream's non-test code (lines that are neither
// blank nor comments): flags, configuration and wiring fit in it; logic
// does not, and belongs in a package named for its job.
const maxCmdLines = 1500

// sqlAllowed are the packages besides store whose statements are not data
// access: pgserver bootstraps the managed server (roles, databases,
// extensions), and internal/pgtest gives each test its own schema.
var sqlAllowed = []string{"store", "pgserver", "internal/pgtest"}

// sqlStatement matches a string literal that is an SQL statement (or
// the start of one built by concatenation or fmt): it opens with a
// statement keyword, in capitals as the codebase writes SQL, followed by
// what that statement needs (SELECT a column list with FROM, a function
// call or a constant; UPDATE … SET; DELETE FROM; INSERT INTO; …). Prose
// such as "select the best" or an error message "SELECT failed" is not SQL.
var sqlStatement = regexp.MustCompile(`(?s)^\s*(` +
	`SELECT\s+(DISTINCT\s+)?(.*\sFROM\s|[\w.]+\s*\(|\*|\$\d|\d|EXISTS\b|%s)` +
	`|SELECT\s*$|INSERT\s+INTO\s|UPDATE\s+\S+(\s+(AS\s+)?\w+)?\s+SET\s|DELETE\s+FROM\s|COPY\s+\S+.*\s(FROM|TO)\s` +
	`|CREATE\s+(TABLE|SCHEMA|(UNIQUE\s+)?INDEX|EXTENSION|ROLE|DATABASE|TRIGGER|(OR\s+REPLACE\s+)?FUNCTION)\s` +
	`|DROP\s+(TABLE|SCHEMA|INDEX|ROLE|DATABASE)\s|ALTER\s+(TABLE|ROLE|DATABASE|SYSTEM)\s` +
	`|TRUNCATE\s|VACUUM[\s(]|ANALYZE\s+\w|WITH\s+(RECURSIVE\s+)?\w+(\s*\([^)]*\))?\s+AS\s*(NOT\s+)?(MATERIALIZED\s+)?\()`)

// sqlFragment and sqlKeyword match a piece of a statement assembled from
// several literals: a pgx placeholder ($1) beside an SQL keyword. Prose
// has no placeholders, and a price has no WHERE.
var (
	sqlFragment = regexp.MustCompile(`\$\d+`)
	sqlKeyword  = regexp.MustCompile(`(^|\s)(WHERE|FROM|AND|OR|SET|VALUES|LIMIT|OFFSET|ORDER\s+BY|GROUP\s+BY|RETURNING|ON\s+CONFLICT|JOIN)(\s|\(|$)`)
)

// isSQL reports whether a string literal's value is SQL.
func isSQL(v string) bool {
	return sqlStatement.MatchString(v) || sqlFragment.MatchString(v) && sqlKeyword.MatchString(v)
}

// runBench matches the declaration of an exported RunBench, the name the
// benchmark entry points had in library packages before internal/bench.
var runBench = regexp.MustCompile(`^func\s+(\([^)]*\)\s*)?RunBench\s*[\[(]`)

// violation is one broken rule, with where.
type violation struct{ rule, where string }

func (v violation) String() string { return v.rule + ": " + v.where }

// goFile is a non-test Go file of the tree, with its package directory
// relative to the root ("." for the root).
type goFile struct{ path, dir string }

// skipDir reports directories that hold no packages of the module.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "vendor"
}

func goFiles(t *testing.T, root string) []goFile {
	t.Helper()
	var out []goFile
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && skipDir(name) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			out = append(out, goFile{path: path, dir: filepath.ToSlash(rel)})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readPipeline reports it when recallapi reaches pipeline through any chain
// of the module's own imports: the read side and the ingest side share only
// the store and the event contract.
func readPipeline(t *testing.T, root string) []violation {
	imports := map[string][]string{} // package dir → module package dirs it imports
	for _, f := range goFiles(t, root) {
		pf, err := parser.ParseFile(token.NewFileSet(), f.path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range pf.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if rest, ok := strings.CutPrefix(p, module+"/"); ok {
				imports[f.dir] = append(imports[f.dir], rest)
			}
		}
	}
	var out []violation
	seen := map[string]bool{}
	var walk func(pkg string, chain []string)
	walk = func(pkg string, chain []string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		for _, dep := range imports[pkg] {
			next := append(slices.Clone(chain), dep)
			if dep == "pipeline" {
				out = append(out, violation{"recallapi imports pipeline", strings.Join(next, " → ")})
				continue
			}
			walk(dep, next)
		}
	}
	walk("recallapi", []string{"recallapi"})
	return out
}

// sqlOutsideStore reports string literals that start an SQL statement in
// non-test files of packages other than store (and sqlAllowed).
func sqlOutsideStore(t *testing.T, root string) []violation {
	var out []violation
	for _, f := range goFiles(t, root) {
		allowed := false
		for _, a := range sqlAllowed {
			if f.dir == a || strings.HasPrefix(f.dir, a+"/") {
				allowed = true
			}
		}
		if allowed {
			continue
		}
		src, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		var s scanner.Scanner
		s.Init(fset.AddFile(f.path, fset.Base(), len(src)), src, nil, 0)
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok != token.STRING {
				continue
			}
			v, err := strconv.Unquote(lit)
			if err != nil {
				continue
			}
			if isSQL(v) {
				first, _, _ := strings.Cut(strings.TrimSpace(v), "\n")
				out = append(out, violation{"SQL outside store", fmt.Sprintf("%s: %q", fset.Position(pos), first)})
			}
		}
	}
	return out
}

// cmdTooLong reports cmd/memstream when its code outgrows wiring.
func cmdTooLong(t *testing.T, root string) []violation {
	n := 0
	for _, f := range goFiles(t, root) {
		if f.dir != "cmd/memstream" {
			continue
		}
		fh, err := os.Open(f.path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "//") {
				n++
			}
		}
		fh.Close()
	}
	if n > maxCmdLines {
		return []violation{{"cmd/memstream is more than wiring", fmt.Sprintf("%d lines of code, at most %d", n, maxCmdLines)}}
	}
	return nil
}

// benchOutsideBench reports an exported RunBench outside internal/bench:
// library packages export what production code uses, not benchmarks.
func benchOutsideBench(t *testing.T, root string) []violation {
	var out []violation
	for _, f := range goFiles(t, root) {
		if f.dir == "internal/bench" || strings.HasPrefix(f.dir, "internal/bench/") {
			continue
		}
		fh, err := os.Open(f.path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for line := 1; sc.Scan(); line++ {
			if runBench.MatchString(sc.Text()) {
				out = append(out, violation{"RunBench outside internal/bench", fmt.Sprintf("%s:%d", f.path, line)})
			}
		}
		fh.Close()
	}
	return out
}

// mapEntry is a line of docs/DESIGN.md's package map: "- `pkg` — job".
var mapEntry = regexp.MustCompile("^- `([^`]+)` ")

// packageMap reports packages missing from docs/DESIGN.md's package map,
// map lines naming no package, and packages named twice: the map is the
// first thing a reader of the design sees, so it has to match the code.
func packageMap(t *testing.T, root string) []violation {
	src, err := os.ReadFile(filepath.Join(root, "docs", "DESIGN.md"))
	if err != nil {
		return []violation{{"package map", err.Error()}}
	}
	listed := map[string]int{}
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Package map"
		case in:
			if m := mapEntry.FindStringSubmatch(line); m != nil {
				listed[m[1]]++
			}
		}
	}
	if len(listed) == 0 {
		return []violation{{"package map", "docs/DESIGN.md has no \"## Package map\" list"}}
	}
	pkgs := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			pkgs[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []violation
	for _, p := range slices.Sorted(maps.Keys(pkgs)) {
		if listed[p] == 0 {
			out = append(out, violation{"package map", p + " is not in docs/DESIGN.md's package map"})
		}
	}
	for _, p := range slices.Sorted(maps.Keys(listed)) {
		switch {
		case !pkgs[p]:
			out = append(out, violation{"package map", p + " is in the package map but is no package"})
		case listed[p] > 1:
			out = append(out, violation{"package map", fmt.Sprintf("%s is in the package map %d times", p, listed[p])})
		}
	}
	return out
}

var rules = []func(*testing.T, string) []violation{readPipeline, sqlOutsideStore, cmdTooLong, benchOutsideBench, packageMap}

func check(t *testing.T, root string) []violation {
	var out []violation
	for _, r := range rules {
		out = append(out, r(t, root)...)
	}
	return out
}

// TestLayout holds the rules on this repository.
func TestLayout(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	for _, v := range check(t, root) {
		t.Error(v)
	}
}

// TestLayoutRulesFail builds a tree that breaks every rule once and checks
// that each rule reports it (and that the clean parts pass), so a rule that
// silently stopped matching would show here.
func TestLayoutRulesFail(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(path, src string) {
		t.Helper()
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module "+module+"\n")
	// recallapi reaches pipeline through another package.
	write("recallapi/server.go", "package recallapi\n\nimport _ \""+module+"/recall\"\n")
	write("recall/recall.go", "package recall\n\nimport _ \""+module+"/pipeline\"\n")
	write("pipeline/pipeline.go", "package pipeline\n")
	// SQL in recall; the same statement in store, pgserver and a test is fine.
	write("recall/arms.go", "package recall\n\nconst q = `\n\tSELECT id FROM memory_units WHERE bank_id = $1`\n")
	write("store/recall.go", "package store\n\nconst q = `SELECT id FROM memory_units`\n")
	write("pgserver/exec.go", "package pgserver\n\nconst q = \"CREATE EXTENSION IF NOT EXISTS vector\"\n")
	write("recall/arms_test.go", "package recall\n\nconst q2 = `UPDATE memory_units SET state = 'invalidated'`\n")
	write("recall/doc.go", "package recall\n\n// Select the facts; \"select\" in prose is fine.\nconst s = \"select the best\"\n"+
		"var e = []string{\"SELECT failed: connection refused\", \"UPDATE the bank\", \"costs $5 or less\", \"DELETE\", \"Copy from the left\"}\n")
	// Statements assembled from pieces, an aliased UPDATE, an admin query.
	write("recall/build.go", "package recall\n\nvar q = \"SELECT \" + cols + \" FROM memory_units WHERE bank_id = $1\"\n"+
		"var u = fmt.Sprintf(`UPDATE entities t SET n = t.n + 1 WHERE t.id = %s`, id)\n")
	write("ops/ops.go", "package ops\n\nconst q = \"SELECT pg_is_in_recovery()\"\n")
	// The package map: defense is missing, lexical is no package, ops is twice.
	write("docs/DESIGN.md", "# design\n\n## Package map\n\n"+
		"- `recallapi` — api\n- `recall` — read\n- `pipeline` — ingest\n- `store` — SQL\n- `pgserver` — server\n"+
		"- `internal/bench` — benchmarks\n- `cmd/memstream` — wiring\n- `ops` — health\n- `lexical` — gone\n- `ops` — again\n\n"+
		"## Delivery\n\n- `defense` — not the map: another section\n")
	// A benchmark entry point in a library package, and one in internal/bench.
	write("defense/bench.go", "package defense\n\nfunc RunBench() error { return nil }\n")
	write("internal/bench/defense.go", "package bench\n\nfunc RunBench() error { return nil }\n")
	// cmd/memstream one line too long, comments and blank lines not counted.
	var b strings.Builder
	b.WriteString("package main\n\n// wiring\n\n")
	for i := 0; i < maxCmdLines; i++ {
		fmt.Fprintf(&b, "var v%d = %d\n", i, i)
	}
	write("cmd/memstream/main.go", b.String())

	got := map[string][]string{}
	for _, v := range check(t, root) {
		got[v.rule] = append(got[v.rule], v.where)
	}
	want := map[string]int{
		"recallapi imports pipeline":        1,
		"SQL outside store":                 5,
		"cmd/memstream is more than wiring": 1,
		"RunBench outside internal/bench":   1,
		"package map":                       3,
	}
	for rule, n := range want {
		if len(got[rule]) != n {
			t.Errorf("%s: %d violations %v, want %d", rule, len(got[rule]), got[rule], n)
		}
	}
	if w := got["recallapi imports pipeline"]; len(w) == 1 && w[0] != "recallapi → recall → pipeline" {
		t.Errorf("import chain %q", w[0])
	}
	sqlAt := map[string]int{}
	for _, w := range got["SQL outside store"] {
		f, _, _ := strings.Cut(w, ":")
		rel, _ := filepath.Rel(root, f)
		sqlAt[filepath.ToSlash(rel)]++
	}
	if want := map[string]int{"recall/arms.go": 1, "recall/build.go": 3, "ops/ops.go": 1}; !maps.Equal(sqlAt, want) {
		t.Errorf("SQL found in %v, want %v", sqlAt, want)
	}
	if w := got["package map"]; len(w) == 3 && (!strings.HasPrefix(w[0], "defense is not") || !strings.HasPrefix(w[1], "lexical is in") || !strings.HasPrefix(w[2], "ops is in the package map 2 times")) {
		t.Errorf("package map violations %q, want defense missing, lexical extra, ops twice", w)
	}
	if w := got["RunBench outside internal/bench"]; len(w) == 1 && !strings.Contains(w[0], "defense/bench.go") {
		t.Errorf("RunBench found in %q, want defense/bench.go", w[0])
	}
	if len(got) != len(want) {
		t.Errorf("unexpected rules broken: %v", got)
	}
}
