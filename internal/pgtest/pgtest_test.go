package pgtest

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestSchemaName(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	for _, tc := range []struct{ test, prefix string }{
		{"TestStore", "t_teststore_"},
		{"TestStore/bank A:ü", "t_teststore_bank_a___"},
		{strings.Repeat("TestLong", 20), "t_testlongtestlong"},
	} {
		got := schemaName(tc.test)
		if !strings.HasPrefix(got, tc.prefix) || !valid.MatchString(got) || len(got) > 63 {
			t.Errorf("schemaName(%q) = %q, want a valid identifier of at most 63 bytes starting %q", tc.test, got, tc.prefix)
		}
	}
	if a, b := schemaName("TestX"), schemaName("TestX"); a == b {
		t.Errorf("schemaName is not unique: %q twice", a)
	}
}

func TestWithSearchPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"postgres://u@h:1/db?sslmode=disable", "postgres://u@h:1/db?search_path=s%2Cpublic&sslmode=disable"},
		{"host=h dbname=db", "host=h dbname=db search_path='s,public'"},
	} {
		got, err := withSearchPath(tc.in, "s,public")
		if err != nil || got != tc.want {
			t.Errorf("withSearchPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	conn, err := pgx.Connect(t.Context(), URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_extension WHERE extname IN ('vector', 'pg_trgm')").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("found %d of the extensions vector and pg_trgm, want 2", n)
	}
}

func TestSchema(t *testing.T) {
	t.Parallel()
	base := URL(t)
	var schemas []string
	t.Run("isolated", func(t *testing.T) {
		for _, name := range []string{"a", "b"} {
			dbURL, schema := Schema(t)
			schemas = append(schemas, schema)
			conn, err := pgx.Connect(t.Context(), dbURL)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			var current string
			if err := conn.QueryRow(t.Context(), "SELECT current_schema()").Scan(&current); err != nil {
				t.Fatal(err)
			}
			if current != schema {
				t.Fatalf("current_schema() = %q, want %q", current, schema)
			}
			// Same unqualified table name in both schemas; vector and
			// similarity() resolve from public.
			for _, stmt := range []string{
				"CREATE TABLE items (name text, embedding vector(3))",
				"INSERT INTO items VALUES ('" + name + "', '[1,2,3]')",
			} {
				if _, err := conn.Exec(t.Context(), stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			var got string
			var sim float32
			if err := conn.QueryRow(t.Context(), "SELECT name, similarity(name, name) FROM items").Scan(&got, &sim); err != nil {
				t.Fatal(err)
			}
			if got != name || sim != 1 {
				t.Fatalf("items in schema %s: (%q, %v), want (%q, 1)", schema, got, sim, name)
			}
		}
	})

	conn, err := pgx.Connect(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var left int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_namespace WHERE nspname = ANY($1)", schemas).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if len(schemas) != 2 || left != 0 {
		t.Fatalf("schemas %v: %d left after the test ended, want all dropped", schemas, left)
	}
}

// TestPortIsTheUsersOwn: root keeps the documented port; every other user
// gets one of their own, never the embedded server's default, so two users'
// test runs on one machine each start their own server.
func TestPortIsTheUsersOwn(t *testing.T) {
	p := Port()
	if os.Getuid() == 0 && p != basePort {
		t.Errorf("root's test port %d, want %d", p, basePort)
	}
	if os.Getuid() > 0 && p == basePort {
		t.Errorf("uid %d got root's test port %d", os.Getuid(), p)
	}
	if p == 54329 || p < 1024 || p > 65535 {
		t.Errorf("test port %d: want a free-standing port above 1024, not the embedded default 54329", p)
	}
}
