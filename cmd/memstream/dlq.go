package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/memstream/memstream/broker"
)

func cmdDLQ(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "replay" {
		fmt.Fprintln(stderr, "Usage: memstream dlq replay [--from-offset N] [--limit N] [--bank B] [--config F] [--set key=value]...")
		return errors.New("dlq: the only subcommand is replay")
	}
	fs := flag.NewFlagSet("dlq replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path, sets := commonFlags(fs)
	from := fs.Int64("from-offset", -1, "start every DLQ partition at this offset instead of the group's committed offset")
	limit := fs.Int("limit", 0, "replay at most this many records (0: all)")
	bank := fs.String("bank", "", "replay only records of this bank_id; others are left for a later run")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: memstream dlq replay [--from-offset N] [--limit N] [--bank B]\n\n"+
			"Re-produces dead-lettered records to their source topic with the original key, value and\n"+
			"headers (the memstream.error.* and memstream.source.* headers removed), up to the DLQ's end\n"+
			"offsets at start, and commits progress to the consumer group %s. Flags:\n", broker.DLQReplayGroup)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *limit < 0 {
		return fmt.Errorf("dlq replay: --limit must be >= 0, got %d", *limit)
	}
	cfg, err := loadConfig(*path, *sets)
	if err != nil {
		return err
	}
	cl, err := broker.NewProducer(broker.ProducerDeps{}, broker.ProducerConfig{Brokers: cfg.Kafka.Addrs(), ClientID: cfg.Kafka.ClientID + "-dlq-replay"})
	if err != nil {
		return fmt.Errorf("kafka.brokers: %w", err)
	}
	defer cl.Close()
	res, err := broker.ReplayDLQ(ctx, cl, broker.ReplayConfig{
		Brokers: cfg.Kafka.Addrs(), ClientID: cfg.Kafka.ClientID + "-dlq-replay",
		DLQTopic: cfg.Kafka.DLQTopic, DefaultTopic: cfg.Kafka.Topics[0], Group: broker.DLQReplayGroup,
		FromOffset: *from, Limit: *limit, Bank: *bank,
	})
	if err != nil {
		fmt.Fprintf(stdout, "replayed %d records from %s before stopping; group %s holds the progress\n",
			res.Replayed, cfg.Kafka.DLQTopic, broker.DLQReplayGroup)
		return err
	}
	fmt.Fprintf(stdout, "replayed %d records from %s (%d of other banks left in place); group %s committed\n",
		res.Replayed, cfg.Kafka.DLQTopic, res.Skipped, broker.DLQReplayGroup)
	return nil
}
