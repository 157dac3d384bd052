package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// TestKnowledgeMovesCannotCloseACycle moves folder a under b while b is
// moved under a. Each move checks the tree before it writes; checked
// against the tree the other was changing, both passed and closed a cycle,
// whose recursive walks (delete, the descendant check) never end. The
// first move is held on a row lock after its check (one that the second
// move's foreign-key check does not wait for) until the second has
// had its chance; then at most one may succeed, and the tree stays a tree.
func TestKnowledgeMovesCannotCloseACycle(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	if err := st.EnsureBank(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	folder := func(name string) uuid.UUID {
		n, err := st.CreateKnowledgeNode(ctx, store.KnowledgeNode{ID: uuid.New(), BankID: "b", Kind: "folder", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return n.ID
	}
	a, b := folder("a"), folder("b")
	hold, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	if _, err := hold.Exec(ctx, `SELECT 1 FROM knowledge_nodes WHERE id = $1 FOR NO KEY UPDATE`, a); err != nil {
		t.Fatal(err)
	}
	first, second := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := st.MoveKnowledgeNode(ctx, "b", a, nil, true, &b)
		first <- err
	}()
	waitForBlocked(t, st, hold, `UPDATE knowledge_nodes%`)
	go func() {
		_, err := st.MoveKnowledgeNode(ctx, "b", b, nil, true, &a)
		second <- err
	}()
	// The second move either finishes at once or waits for the first
	// (which waits for hold).
	pid := int32(hold.Conn().PgConn().PID())
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case err := <-second:
			second <- err
		default:
			var waiting int
			if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity w, pg_stat_activity m
				WHERE $1::int = ANY (pg_blocking_pids(m.pid)) AND m.pid = ANY (pg_blocking_pids(w.pid))`, pid).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if waiting == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the second move neither finished nor waited for the first")
				}
				time.Sleep(10 * time.Millisecond)
				continue
			}
		}
		break
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	errA, errB := <-first, <-second
	if errA != nil && !errors.Is(errA, store.ErrConflict) || errB != nil && !errors.Is(errB, store.ErrConflict) {
		t.Fatalf("moves: %v, %v; want success or ErrConflict", errA, errB)
	}
	if errA == nil && errB == nil {
		t.Fatal("both opposite moves succeeded: a and b are each other's parent")
	}
	// Walk up from each node, bounded: a cycle must not be there.
	for _, id := range []uuid.UUID{a, b} {
		cur := id
		for steps := 0; ; steps++ {
			var parent *uuid.UUID
			if err := st.Pool().QueryRow(ctx, `SELECT parent_id FROM knowledge_nodes WHERE id = $1`, cur).Scan(&parent); err != nil {
				t.Fatal(err)
			}
			if parent == nil {
				break
			}
			if steps > 2 {
				t.Fatalf("node %s: its parents loop", id)
			}
			cur = *parent
		}
	}
}

// TestKnowledgeNodeUnderAFolderBeingDeleted creates, then moves, a node
// under a folder whose delete is in progress: the call must answer
// ErrNotFound (the folder is gone), not the foreign-key violation its
// write met once the delete committed (a 500). The delete is held
// uncommitted until the call waits on it.
func TestKnowledgeNodeUnderAFolderBeingDeleted(t *testing.T) {
	t.Parallel()
	st := migrated(t, 4)
	ctx := context.Background()
	if err := st.EnsureBank(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	folder := func(name string) uuid.UUID {
		n, err := st.CreateKnowledgeNode(ctx, store.KnowledgeNode{ID: uuid.New(), BankID: "b", Kind: "folder", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return n.ID
	}
	other := folder("other")
	for name, call := range map[string]func(parent uuid.UUID) error{
		"create": func(parent uuid.UUID) error {
			_, err := st.CreateKnowledgeNode(ctx, store.KnowledgeNode{ID: uuid.New(), BankID: "b", Kind: "folder", Name: "child", ParentID: &parent})
			return err
		},
		"move": func(parent uuid.UUID) error {
			_, err := st.MoveKnowledgeNode(ctx, "b", other, nil, true, &parent)
			return err
		},
	} {
		doomed := folder("doomed " + name)
		hold, err := st.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := hold.Exec(ctx, `DELETE FROM knowledge_nodes WHERE id = $1`, doomed); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- call(doomed) }()
		waitForBlocked(t, st, hold, `%knowledge_nodes%`)
		if err := hold.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s under a folder deleted meanwhile: %v, want ErrNotFound", name, err)
		}
	}
}
