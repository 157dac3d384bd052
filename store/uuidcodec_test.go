package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/memstream/memstream/internal/pgtest"
)

// TestUUIDCodec round-trips google/uuid values, alone, in arrays and as
// NULL, through the pool's type map, and checks that the same bytes reach
// the server as its own uuid parser makes of the text form.
func TestUUIDCodec(t *testing.T) {
	t.Parallel()
	url, _ := pgtest.Schema(t)
	st := open(t, url, 8)
	ctx := context.Background()
	a, b := uuid.New(), uuid.MustParse("00112233-4455-6677-8899-aabbccddeeff")

	var got uuid.UUID
	var same bool
	if err := st.Pool().QueryRow(ctx, `SELECT $1::uuid, $1::uuid = $2::text::uuid`, b, b.String()).Scan(&got, &same); err != nil {
		t.Fatal(err)
	}
	if got != b || !same {
		t.Errorf("round trip %s → %s (server equal to its text form: %v)", b, got, same)
	}

	var arr []uuid.UUID
	var n int
	if err := st.Pool().QueryRow(ctx, `SELECT $1::uuid[], cardinality($1::uuid[])`, []uuid.UUID{a, b, a}).Scan(&arr, &n); err != nil {
		t.Fatal(err)
	}
	if n != 3 || len(arr) != 3 || arr[0] != a || arr[1] != b || arr[2] != a {
		t.Errorf("array round trip: %v (server saw %d)", arr, n)
	}

	// NULL leaves the zero UUID, as uuid.UUID's sql.Scanner did.
	got = a
	if err := st.Pool().QueryRow(ctx, `SELECT NULL::uuid`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != (uuid.UUID{}) {
		t.Errorf("NULL scanned as %s, want the zero UUID", got)
	}
	var p *uuid.UUID
	if err := st.Pool().QueryRow(ctx, `SELECT NULL::uuid`).Scan(&p); err != nil || p != nil {
		t.Errorf("NULL into *uuid.UUID: %v, %v; want nil", p, err)
	}
	if err := st.Pool().QueryRow(ctx, `SELECT $1::uuid`, &b).Scan(&p); err != nil || p == nil || *p != b {
		t.Errorf("pointer round trip: %v, %v", p, err)
	}
}
