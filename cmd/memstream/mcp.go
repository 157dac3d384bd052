package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/memstream/memstream/apiclient"
	"github.com/memstream/memstream/mcpserver"
)

const mcpUsage = `Usage: memstream mcp [--bank B] [--api URL] [--key KEY] [--config F] [--set key=value]...

Serves memstream's memory as an MCP server over stdio (newline-delimited
JSON-RPC on stdin and stdout), for local MCP clients such as Claude Desktop,
Claude Code or Cursor. The tools are Hindsight's MCP tools (retain,
sync_retain, recall, reflect, mental models, banks, documents, …); each call
goes to the memstream HTTP API of a running "memstream serve" (the same
memory /mcp serves over HTTP), with the key given.

With --bank the session is single-bank: the tools act on that bank and take
no bank_id. Without it every tool takes bank_id (default: --default-bank).

The API address defaults to http://<http.addr> of the configuration
(--config, MEMSTREAM_* variables, --set), then MEMSTREAM_API_URL; the key to
MEMSTREAM_API_KEY (prefer it to --key, which other users can see in ps).
Logs go to stderr.

Example (Claude Code):
  claude mcp add memstream -e MEMSTREAM_API_KEY=KEY -- memstream mcp --bank alice

Flags:
`

// cmdMCP runs `memstream mcp`: an MCP stdio session whose tools call the
// HTTP API of a running server.
func cmdMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path, sets := commonFlags(fs)
	bank := fs.String("bank", "", "single-bank mode on this bank (the tools take no bank_id)")
	defBank := fs.String("default-bank", "default", "multi-bank mode: the bank of calls without bank_id")
	api := fs.String("api", "", "the memstream HTTP API (default: $MEMSTREAM_API_URL, else http://<http.addr>)")
	key := fs.String("key", "", "bearer key for the API (default: $MEMSTREAM_API_KEY)")
	fs.Usage = func() {
		fmt.Fprint(stderr, mcpUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("mcp takes no arguments, got %q", fs.Args())
	}
	cfg, err := loadConfig(*path, *sets)
	if err != nil {
		return err
	}
	log := cfg.Log.NewLogger(stderr).With("component", "mcp")
	base := *api
	if base == "" {
		base = os.Getenv("MEMSTREAM_API_URL")
	}
	if base == "" {
		base = "http://" + apiclient.DialAddr(cfg.HTTP.Addr)
	}
	if *key == "" {
		*key = os.Getenv("MEMSTREAM_API_KEY")
	}
	remote, err := mcpserver.Remote(base)
	if err != nil {
		return err
	}
	srv, err := mcpserver.New(mcpserver.Deps{API: remote, Logger: log}, mcpserver.Config{Version: version})
	if err != nil {
		return err
	}
	// Start even when the API is down (it may start later), but say so
	// where the client's log shows it.
	apiclient.WarnIfDown(ctx, base, log)
	log.Info("mcp stdio session", "api", base, "bank", *bank, "key_set", *key != "")
	return srv.ServeStdio(ctx, io.NopCloser(stdin), nopWriteCloser{stdout},
		mcpserver.Session{Bank: *bank, DefaultBank: *defBank, Key: *key})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
