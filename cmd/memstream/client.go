package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/memstream/memstream/apiclient"
)

func cmdRecall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("recall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bank := fs.String("bank", "", "bank id (required)")
	asJSON := fs.Bool("json", false, "print the raw JSON response")
	api := fs.String("api", "", "API base URL (default $MEMSTREAM_API_URL or http://127.0.0.1:8888); bearer key from $MEMSTREAM_API_KEY")
	maxTokens := fs.Int("max-tokens", 4096, "token budget of the results")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: memstream recall --bank B [--json] QUERY\n\nAsks the running server's recall API. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	query := strings.Join(fs.Args(), " ")
	if *bank == "" || query == "" {
		fs.Usage()
		return fmt.Errorf("recall: --bank and a QUERY are required")
	}
	c, err := apiclient.New(apiclient.Config{Base: *api})
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.Call(ctx, "POST", "/v1/default/banks/"+*bank+"/memories/recall", map[string]any{"query": query, "max_tokens": *maxTokens}, &raw); err != nil {
		return err
	}
	if *asJSON {
		_, err := stdout.Write(append(raw, '\n'))
		return err
	}
	var resp struct {
		Results []apiclient.RecallResult `json:"results"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return err
	}
	apiclient.WriteResults(stdout, resp.Results, 10)
	return nil
}
