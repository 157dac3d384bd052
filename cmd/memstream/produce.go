package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/memstream/memstream/broker"
)

func cmdProduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("produce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path, sets := commonFlags(fs)
	topic := fs.String("topic", "", "topic to produce to (default: the first of kafka.topics)")
	bank := fs.String("bank", "", "set bank_id on every event")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: memstream produce FILE.jsonl|- [--topic T] [--bank B]\n\nPublishes one JSON event per line (SPEC §3) to Kafka. Flags:")
		fs.PrintDefaults()
	}
	file, rest := splitPositional(args)
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if file == "" && fs.NArg() > 0 {
		file = fs.Arg(0)
	}
	if file == "" {
		fs.Usage()
		return fmt.Errorf("produce: name a FILE.jsonl or - for stdin")
	}
	cfg, err := loadConfig(*path, *sets)
	if err != nil {
		return err
	}
	if *topic == "" {
		*topic = cfg.Kafka.Topics[0]
	}
	cl, err := broker.NewProducer(broker.ProducerDeps{}, broker.ProducerConfig{Brokers: cfg.Kafka.Addrs(), ClientID: cfg.Kafka.ClientID + "-produce"})
	if err != nil {
		return err
	}
	defer cl.Close()
	n, err := broker.ProduceFile(ctx, cl, file, *topic, *bank, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "produced %d events to %s\n", n, *topic)
	return nil
}

// splitPositional lets the file come before or after the flags.
func splitPositional(args []string) (string, []string) {
	if len(args) > 0 && (args[0] == "-" || (len(args[0]) > 0 && args[0][0] != '-')) {
		return args[0], args[1:]
	}
	return "", args
}
