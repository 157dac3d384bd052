// Command memstream is long-term memory for AI agents: a Kafka-driven
// ingester, a recall/reflect HTTP API and background consolidation workers
// in one binary. main only parses the command line and wires packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/memstream/memstream/config"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

const usage = `memstream — long-term memory for AI agents, ingested from Kafka.

Usage:
  memstream serve [--config F] [--roles ingest,api,worker] [--set key=value]...
  memstream demo [--exit] [--config F]
  memstream produce FILE.jsonl|- [--topic T] [--bank B] [--config F]
  memstream recall --bank B [--json] [--api URL] QUERY
  memstream reflect --bank B [--json] [--api URL] QUESTION
  memstream mcp [--bank B] [--api URL] [--config F]
  memstream migrate [--config F]
  memstream bench ingest|consolidate|recall|defense|reflect|compare|fake-openai [flags]
  memstream eval gen|run [flags]
  memstream consolidate --bank B
  memstream export pages --bank B --out DIR
  memstream defense rescan --bank B [--dry-run]
  memstream dlq replay [flags]
  memstream config print [--config F]
  memstream version

Configuration comes from --config (YAML), MEMSTREAM_<SECTION>_<KEY>
environment variables and --set overrides, in that order. With no
configuration, memstream runs an embedded Kafka broker and a managed
PostgreSQL server under ./.memstream. Run "memstream COMMAND --help" for the
flags of one command, and "memstream config print" for every key.
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "memstream:", err)
		}
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return cmdServe(ctx, rest, stderr)
	case "demo":
		return cmdDemo(ctx, rest, stdout, stderr)
	case "produce":
		return cmdProduce(ctx, rest, stdout, stderr)
	case "recall":
		return cmdRecall(ctx, rest, stdout, stderr)
	case "reflect":
		return cmdReflect(ctx, rest, stdout, stderr)
	case "mcp":
		return cmdMCP(ctx, rest, os.Stdin, stdout, stderr)
	case "migrate":
		return cmdMigrate(ctx, rest, stdout, stderr)
	case "bench":
		return cmdBench(ctx, rest, stdout, stderr)
	case "eval":
		return cmdEval(ctx, rest, stdout, stderr)
	case "consolidate":
		return cmdConsolidate(ctx, rest, stdout, stderr)
	case "export":
		return cmdExport(ctx, rest, stdout, stderr)
	case "defense":
		return cmdDefense(ctx, rest, stdout, stderr)
	case "dlq":
		return cmdDLQ(ctx, rest, stdout, stderr)
	case "config":
		return cmdConfig(rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "memstream", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

// repeated collects the values of a repeatable flag.
type repeated []string

func (o *repeated) String() string     { return strings.Join(*o, ",") }
func (o *repeated) Set(v string) error { *o = append(*o, v); return nil }

// overrides are the --set key=value flags.
type overrides = repeated

// commonFlags adds --config and --set to a command's flag set.
func commonFlags(fs *flag.FlagSet) (*string, *overrides) {
	path := fs.String("config", "", "YAML configuration file")
	var sets overrides
	fs.Var(&sets, "set", "override one key, e.g. --set http.addr=127.0.0.1:9000 (repeatable)")
	return path, &sets
}

func loadConfig(path string, sets overrides) (config.Config, error) {
	return config.Load(path, os.Environ(), sets)
}

func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

func cmdServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path, sets := commonFlags(fs)
	rolesFlag := fs.String("roles", "ingest,api,worker", "roles to run: any of ingest, api, worker")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: memstream serve [--config F] [--roles ingest,api,worker] [--set key=value]...\n\nRuns the service. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	rl, err := config.ParseRoles(*rolesFlag)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(*path, *sets)
	if err != nil {
		return err
	}
	log := cfg.Log.NewLogger(stderr)
	a, err := start(ctx, cfg, rl, newRegistry(), log)
	if err != nil {
		return err
	}
	if a.api != nil {
		go func() {
			select {
			case addr := <-a.apiAddr:
				log.Info("http api listening", "addr", addr, "console", "http://"+addr+"/console/", "mcp", "http://"+addr+"/mcp")
				a.apiAddr <- addr
			case <-ctx.Done():
			}
		}()
	}
	return a.run(ctx)
}

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path, sets := commonFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	_, _, _, closeStore, err := commandStore(ctx, *path, *sets, stderr)
	if err != nil {
		return err
	}
	closeStore()
	fmt.Fprintln(stdout, "migrations applied; schema is current")
	return nil
}

func cmdConfig(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "print" {
		return errors.New("usage: memstream config print [--config F] [--set key=value]")
	}
	fs := flag.NewFlagSet("config print", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path, sets := commonFlags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	cfg, err := loadConfig(*path, *sets)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, config.Print(cfg))
	if cfg.Database.Embedded() {
		fmt.Fprintf(stdout, "# managed postgres URL: postgres://memstream@127.0.0.1:%d/memstream?sslmode=disable\n", cfg.Database.EmbeddedPort)
	}
	return nil
}
