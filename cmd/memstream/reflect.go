package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/memstream/memstream/reflect"
)

// cmdReflect asks the running server's reflect API and prints the answer
// with what it is based on.
func cmdReflect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reflect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bank := fs.String("bank", "", "bank id (required)")
	asJSON := fs.Bool("json", false, "print the raw JSON response")
	api := fs.String("api", "", "API base URL (default $MEMSTREAM_API_URL or http://127.0.0.1:8888); bearer key from $MEMSTREAM_API_KEY")
	budget := fs.String("budget", "", "recall budget of the agent's searches: low, mid or high (server default mid)")
	maxTokens := fs.Int("max-tokens", 0, "token cap of each memory search (server default)")
	schemaFile := fs.String("schema", "", "JSON schema file: also return structured_output that conforms to it")
	var disp dispositionFlag
	fs.Var(&disp, "disposition", "override the bank's traits as skepticism,literalism,empathy (each 1-5), e.g. 5,3,1")
	var tags tagsFlag
	fs.Var(&tags, "tag", "only use memories with this tag (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: memstream reflect --bank B [--json] [--api URL] QUESTION\n\nAsks the running server's reflect API and prints the answer and its sources. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	question := strings.Join(fs.Args(), " ")
	if *bank == "" || strings.TrimSpace(question) == "" {
		fs.Usage()
		return fmt.Errorf("reflect: --bank and a QUESTION are required")
	}
	req := reflect.Request{Query: question, Budget: *budget, MaxTokens: *maxTokens, Tags: tags, Disposition: disp.d}
	if *schemaFile != "" {
		raw, err := os.ReadFile(*schemaFile)
		if err != nil {
			return fmt.Errorf("reflect --schema: %w", err)
		}
		if err := json.Unmarshal(raw, &req.ResponseSchema); err != nil {
			return fmt.Errorf("reflect --schema %s: not a JSON object: %w", *schemaFile, err)
		}
	}
	c := newAPIClient(*api)
	var raw json.RawMessage
	if err := c.call(ctx, "POST", "/v1/default/banks/"+url.PathEscape(*bank)+"/reflect", req, &raw); err != nil {
		return err
	}
	if *asJSON {
		_, err := stdout.Write(append(raw, '\n'))
		return err
	}
	var resp reflect.Response
	if err := json.Unmarshal(raw, &resp); err != nil {
		return fmt.Errorf("reflect: decode answer: %w", err)
	}
	printReflect(stdout, resp)
	return nil
}

// printReflect writes the answer, its sources and a one-line trace.
func printReflect(w io.Writer, r reflect.Response) {
	fmt.Fprintln(w, strings.TrimSpace(r.Text))
	if r.StructuredOutput != nil {
		b, _ := json.MarshalIndent(r.StructuredOutput, "", "  ")
		fmt.Fprintf(w, "\nStructured output:\n%s\n", b)
	}
	if r.StructuredOutputError != "" {
		fmt.Fprintf(w, "\nStructured output failed: %s\n", r.StructuredOutputError)
	}
	fmt.Fprintln(w, "\nBased on:")
	n := 0
	for _, g := range []struct {
		name string
		ids  []string
	}{{"mental model", r.BasedOn.MentalModels}, {"observation", r.BasedOn.Observations}, {"memory", r.BasedOn.Memories}} {
		for _, id := range g.ids {
			fmt.Fprintf(w, "  %-12s %s\n", g.name, id)
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "  (nothing)")
	}
	tools := make([]string, len(r.Trace.ToolCalls))
	for i, tc := range r.Trace.ToolCalls {
		tools[i] = tc.Tool
	}
	mode := "llm"
	if r.Extractive {
		mode = "extractive (offline)"
	}
	fmt.Fprintf(w, "\n[%s; %d iterations; forced %v; stop %s; tools %s; %d tokens]\n", mode, r.Trace.Iterations, r.Trace.Forced,
		r.Trace.StopReason, strings.Join(tools, " → "), r.Usage.TotalTokens)
}

// dispositionFlag parses "skepticism,literalism,empathy".
type dispositionFlag struct{ d *reflect.Disposition }

func (f *dispositionFlag) String() string {
	if f.d == nil {
		return ""
	}
	return fmt.Sprintf("%d,%d,%d", f.d.Skepticism, f.d.Literalism, f.d.Empathy)
}

func (f *dispositionFlag) Set(v string) error {
	var d reflect.Disposition
	if _, err := fmt.Sscanf(v, "%d,%d,%d", &d.Skepticism, &d.Literalism, &d.Empathy); err != nil {
		return fmt.Errorf("want skepticism,literalism,empathy like 5,3,1: %w", err)
	}
	for _, x := range []int{d.Skepticism, d.Literalism, d.Empathy} {
		if x < 1 || x > 5 {
			return fmt.Errorf("each trait must be 1-5, got %s", v)
		}
	}
	f.d = &d
	return nil
}

// tagsFlag collects repeated --tag values.
type tagsFlag []string

func (t *tagsFlag) String() string     { return strings.Join(*t, ",") }
func (t *tagsFlag) Set(v string) error { *t = append(*t, v); return nil }
