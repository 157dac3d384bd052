package consumer

import (
	"math/rand/v2"
	"testing"
)

func mustAdd(t *testing.T, p *partitionTrack, off int64, epoch int32, size int) int {
	t.Helper()
	ticket, ok := p.add(off, epoch, size)
	if !ok {
		t.Fatalf("add(%d) refused", off)
	}
	return ticket
}

// A closed track takes no more records and hands none over, and an offset
// at or below one it holds is refused, so the mark can never regress.
func TestTrackRefusesStaleAndClosed(t *testing.T) {
	p := newPartitionTrack()
	a := mustAdd(t, p, 5, 0, 1)
	if _, ok := p.add(5, 0, 1); ok {
		t.Fatal("offset 5 added twice")
	}
	if _, ok := p.add(3, 0, 1); ok {
		t.Fatal("offset 3 added after 5")
	}
	if !p.hand(a) || p.inSink() != 1 {
		t.Fatal("hand of an open track failed")
	}
	b := mustAdd(t, p, 6, 0, 1)
	p.close()
	if p.hand(b) {
		t.Fatal("a closed track handed a record over")
	}
	if _, ok := p.add(7, 0, 1); ok {
		t.Fatal("a closed track took a record")
	}
	p.done(a)
	if p.inSink() != 0 {
		t.Fatalf("inSink = %d after the ack", p.inSink())
	}
	if off, _, ok := p.commitMark(); !ok || off != 6 {
		t.Fatalf("mark = %d/%v, want 6: the unhanded offset 6 stays uncommitted", off, ok)
	}
}

func TestWatermarkAdvancesOnlyOverContiguousPrefix(t *testing.T) {
	p := newPartitionTrack()
	var tickets []int
	for off := int64(10); off < 15; off++ {
		tickets = append(tickets, mustAdd(t, p, off, 3, 100))
	}
	if _, _, ok := p.commitMark(); ok {
		t.Fatal("mark before any ack")
	}
	// Ack 12 and 11 out of order: 10 is still in flight, nothing moves.
	p.done(tickets[2])
	p.done(tickets[1])
	if _, _, ok := p.commitMark(); ok {
		t.Fatal("mark moved past an unacknowledged offset")
	}
	recs, bytes := p.done(tickets[0])
	if recs != 3 || bytes != 300 {
		t.Fatalf("released %d records %d bytes, want 3/300", recs, bytes)
	}
	off, epoch, ok := p.commitMark()
	if !ok || off != 13 || epoch != 3 {
		t.Fatalf("mark = %d/%d/%v, want 13 (next offset to read)", off, epoch, ok)
	}
	if _, _, ok := p.commitMark(); ok {
		t.Fatal("mark reported twice without moving")
	}
	// A double ack is ignored.
	if r, _ := p.done(tickets[0]); r != 0 {
		t.Fatal("double ack released records")
	}
	p.markUncommitted()
	if off, _, ok := p.commitMark(); !ok || off != 13 {
		t.Fatal("failed commit not retried")
	}
	if p.inflight() != 2 {
		t.Fatalf("inflight = %d, want 2", p.inflight())
	}
}

func TestRevokedTrackIgnoresAcks(t *testing.T) {
	p := newPartitionTrack()
	a := mustAdd(t, p, 0, 0, 10)
	b := mustAdd(t, p, 1, 0, 10)
	recs, bytes := p.revoke()
	if recs != 2 || bytes != 20 {
		t.Fatalf("revoke released %d/%d", recs, bytes)
	}
	if r, _ := p.done(a); r != 0 {
		t.Fatal("ack after revoke counted")
	}
	_ = b
	if _, _, ok := p.commitMark(); ok {
		t.Fatal("revoked track offers a mark")
	}
}

// Random acknowledgement orders over many records (crossing compaction)
// always end with the mark just past the last offset.
func TestWatermarkRandomOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 20; round++ {
		p := newPartitionTrack()
		n := 3000 + rng.IntN(2000)
		tickets := make([]int, n)
		for i := range tickets {
			tickets[i] = mustAdd(t, p, int64(i), 1, 1)
		}
		order := rng.Perm(n)
		maxMark := int64(-1)
		for k, i := range order {
			p.done(tickets[i])
			if off, _, ok := p.commitMark(); ok {
				if off < maxMark {
					t.Fatal("mark went backwards")
				}
				maxMark = off
				// Every offset below the mark must be acknowledged.
				for _, j := range order[k+1:] {
					if int64(j) < off {
						t.Fatalf("mark %d passes unacknowledged offset %d", off, j)
					}
				}
			}
			if k > 200 {
				break
			}
		}
		for _, i := range order {
			p.done(tickets[i])
		}
		off, _, _ := p.commitMark()
		if max(off, maxMark) != int64(n) {
			t.Fatalf("final mark %d, want %d", off, n)
		}
		if p.inflight() != 0 {
			t.Fatalf("inflight %d after all acks", p.inflight())
		}
	}
}
