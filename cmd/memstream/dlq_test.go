package main

import (
	"context"
	"strings"
	"testing"
)

func TestCmdDLQRejectsUnknownSubcommand(t *testing.T) {
	var out, errOut strings.Builder
	if err := cmdDLQ(context.Background(), []string{"list"}, &out, &errOut); err == nil {
		t.Fatal("dlq list accepted")
	}
	if err := cmdDLQ(context.Background(), []string{"replay", "--limit", "-1"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "--limit") {
		t.Fatalf("negative --limit: %v", err)
	}
}
