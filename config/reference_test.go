package config

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite docs/CONFIGURATION.md from the code")

const referencePath = "../docs/CONFIGURATION.md"

// TestReferenceMatchesTheCode holds docs/CONFIGURATION.md to the code: every
// key, its environment variable, its default and the doc comment of its
// field. A key without a comment fails, so no key goes undocumented.
// `go test ./config -update` rewrites the file.
func TestReferenceMatchesTheCode(t *testing.T) {
	comments := fieldComments(t, "config.go")
	cfg := Default()
	var b strings.Builder
	b.WriteString(`# Configuration reference

Generated from the code by ` + "`go test ./config -update`" + ` and checked by
` + "`go test ./config`" + ` (in ` + "`make test`" + `). Each key is set in the YAML
file (` + "`--config`" + `), then by its environment variable, then by
` + "`--set key=value`" + `; an invalid value stops start-up with an error naming
the key, and so does an unknown key in the file. ` + "`memstream config print`" + `
shows the effective values, secrets masked.

| key | environment | default | meaning |
|---|---|---|---|
`)
	for _, l := range leaves(&cfg) {
		doc := comments[l.owner.Name()+"."+l.field]
		if doc == "" {
			t.Errorf("%s (%s.%s) has no doc comment", l.key, l.owner.Name(), l.field)
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", l.key, l.env, defaultText(l.value), strings.ReplaceAll(meaning(doc, l.field), "|", "\\|"))
	}
	got := b.String()
	if *update {
		if err := os.WriteFile(referencePath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatalf("%v (run go test ./config -update)", err)
	}
	if string(want) != got {
		t.Errorf("docs/CONFIGURATION.md differs from the code: run go test ./config -update")
	}
}

// meaning drops the Go field name a doc comment opens with ("Timeout
// bounds …" reads "Bounds …" beside its key).
func meaning(doc, field string) string {
	rest, ok := strings.CutPrefix(doc, field+" ")
	if !ok || rest == "" {
		return doc
	}
	rest = strings.TrimPrefix(rest, "is ")
	return strings.ToUpper(rest[:1]) + rest[1:]
}

func defaultText(v reflect.Value) string {
	switch {
	case v.Type() == reflect.TypeOf(time.Duration(0)):
		return "`" + time.Duration(v.Int()).String() + "`"
	case v.Kind() == reflect.Slice:
		if v.Len() == 0 {
			return "(none)"
		}
		if v.Type().Elem().Kind() == reflect.String {
			return "`" + strings.Join(v.Interface().([]string), ",") + "`"
		}
		return fmt.Sprintf("%d entries", v.Len())
	case v.Kind() == reflect.String && v.String() == "":
		return "(empty)"
	}
	return fmt.Sprintf("`%v`", v.Interface())
}

// fieldComments maps Type.Field to its doc or line comment, joined on one
// line. A field without its own comment shares the one of the field just
// above it when the two stand on consecutive lines (a commented group).
func fieldComments(t *testing.T, file string) map[string]string {
	t.Helper()
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, sp := range g.Specs {
			ts, ok := sp.(*ast.TypeSpec)
			if !ok {
				continue
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			prev, prevLine := "", -2
			for _, fl := range st.Fields.List {
				text := ""
				if fl.Doc != nil {
					text = fl.Doc.Text()
				} else if fl.Comment != nil {
					text = fl.Comment.Text()
				}
				text = strings.Join(strings.Fields(text), " ")
				line := fs.Position(fl.Pos()).Line
				if text == "" && line == prevLine+1 {
					text = prev
				}
				for _, n := range fl.Names {
					out[ts.Name.Name+"."+n.Name] = text
				}
				prev, prevLine = text, line
			}
		}
	}
	return out
}
