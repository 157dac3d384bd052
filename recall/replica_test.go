package recall

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/pgserver"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
)

// Recall served by a streaming replica (database.read_url): a primary and
// a hot standby of its own, on free ports, never the shared test server.
// Facts written to the primary are recalled from the standby once it has
// replayed them, and the standby refuses writes, so the reads did go there.
func TestRecallFromStreamingReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	primary, dir, err := pgserver.StartTemp(ctx, pgserver.Deps{Logger: log}, "memstream-replica-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = primary.Stop(context.Background())
		_ = os.RemoveAll(dir)
	})
	port, err := pgserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	standby, err := pgserver.StartStandby(ctx, pgserver.Deps{Logger: log}, primary, pgserver.Config{DataDir: filepath.Join(dir, "standby"), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.Stop(context.Background()) })

	write, err := store.Open(ctx, store.Deps{Logger: log}, store.Config{URL: primary.URL(), Dim: testDim, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer write.Close()
	if _, err := write.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	emb, err := embed.NewHash(testDim)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"Alice keeps bees on the roof of her building in Lisbon", "Bob repairs old bicycles on weekends",
		"The quarterly report is due before the board meeting"}
	vecs, err := emb.EmbedDocuments(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	var evs []store.EventRecord
	for i, tx := range texts {
		key := "replica-" + string(rune('a'+i))
		evs = append(evs, store.EventRecord{BankID: "r", EventKey: key, DocumentID: "doc-" + key, Facts: []store.FactRow{{
			ID: store.DeriveID("r", "fact", key), FactType: "world", Text: tx, Embedding: vecs[i], SearchAux: text.Aux(tx, nil),
			MentionedAt: time.Date(2025, 3, 1+2*i, 9, 0, 0, 0, time.UTC), IdemKey: key}}})
	}
	if _, err := write.PersistBatch(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if err := pgserver.WaitReplayed(ctx, primary, standby, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	read, err := store.Open(ctx, store.Deps{Logger: log}, store.Config{URL: standby.URL(), Dim: testDim, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close()
	readDB := pgtest.Pool(t, standby.URL())
	var recovering bool
	if err := readDB.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering); err != nil || !recovering {
		t.Fatalf("read pool is not on a standby: in recovery %v, %v", recovering, err)
	}
	_, err = readDB.Exec(ctx, "INSERT INTO banks (id) VALUES ('not-here')")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "25006" { // read_only_sql_transaction
		t.Fatalf("write on the standby: %v, want read-only refusal", err)
	}
	rec, err := New(Deps{Store: read, Embedder: emb, Logger: log}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rec.Recall(ctx, Request{BankID: "r", Query: "Who keeps bees in Lisbon?", QueryTime: time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatalf("recall on the standby: %v", err)
	}
	if len(resp.Results) == 0 || resp.Results[0].Text != texts[0] {
		t.Fatalf("recall on the standby: %+v", resp.Results)
	}
}
