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

	"github.com/memstream/memstream/apiclient"
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
	var disp *reflect.Disposition
	fs.Func("disposition", "override the bank's traits as skepticism,literalism,empathy (each 1-5), e.g. 5,3,1", func(v string) error {
		d, err := reflect.ParseDisposition(v)
		disp = &d
		return err
	})
	var tags repeated
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
	req := reflect.Request{Query: question, Budget: *budget, MaxTokens: *maxTokens, Tags: tags, Disposition: disp}
	if *schemaFile != "" {
		raw, err := os.ReadFile(*schemaFile)
		if err != nil {
			return fmt.Errorf("reflect --schema: %w", err)
		}
		if err := json.Unmarshal(raw, &req.ResponseSchema); err != nil {
			return fmt.Errorf("reflect --schema %s: not a JSON object: %w", *schemaFile, err)
		}
	}
	c, err := apiclient.New(apiclient.Config{Base: *api})
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.Call(ctx, "POST", "/v1/default/banks/"+url.PathEscape(*bank)+"/reflect", req, &raw); err != nil {
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
	apiclient.WriteReflect(stdout, resp)
	return nil
}
