package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/memstream/memstream/apiclient"
	"github.com/memstream/memstream/demo"
)

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path, sets := commonFlags(fs)
	exit := fs.Bool("exit", false, "exit after printing the results instead of serving")
	file := fs.String("file", "", "chat log to ingest (JSONL events; default: the built-in demo chat log, the same as examples/chatlogs/demo.jsonl)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: memstream demo [--exit] [--config F]\n\nStarts embedded Kafka and PostgreSQL, ingests the demo chat log through Kafka,\nprints recall results, then keeps serving (unless --exit). Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := loadConfig(*path, *sets)
	if err != nil {
		return err
	}
	script, err := demo.Load(*file)
	if err != nil {
		return err
	}
	log := cfg.Log.NewLogger(stderr)
	fmt.Fprintln(stdout, "== memstream demo: starting embedded Kafka and PostgreSQL (first start runs initdb) …")
	p, err := serveInProcess(ctx, cfg, log)
	if err != nil {
		return err
	}
	addr := p.addr
	fmt.Fprintf(stdout, "== web console on http://%s/console/\n", addr)
	api, err := apiclient.New(apiclient.Config{Base: "http://" + addr})
	if err == nil {
		err = script.Run(ctx, demo.Deps{API: api, Producer: p.a.prod, Topic: cfg.Kafka.Topics[0], Progress: stderr}, stdout)
	}
	if err != nil || *exit {
		if serr := p.stop(); err == nil {
			err = serr
		}
		return err
	}
	demo.WriteServing(stdout, addr)
	return p.wait()
}
