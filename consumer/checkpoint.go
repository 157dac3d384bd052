package consumer

import (
	"sync"
)

// partitionTrack follows the in-flight offsets of one assigned partition.
// Records arrive in offset order; acknowledgements may come in any order
// (the pipeline runs lanes in parallel), so the committable mark is the
// offset just past the longest fully-acknowledged prefix.
type partitionTrack struct {
	mu      sync.Mutex
	pending []pendingOffset // in offset order
	head    int             // index of the first not-yet-popped entry
	base    int             // absolute ticket of pending[0]
	mark    int64           // next offset to commit; -1 until something is done
	epoch   int32           // leader epoch of the record at mark-1
	bytes   int
	dirty   bool // mark moved since the last commit
	revoked bool // acknowledgements after revocation are ignored
}

type pendingOffset struct {
	offset int64
	epoch  int32
	size   int
	done   bool
}

func newPartitionTrack() *partitionTrack { return &partitionTrack{mark: -1} }

// add registers a fetched record; offsets must be added in increasing order.
func (p *partitionTrack) add(offset int64, epoch int32, size int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = append(p.pending, pendingOffset{offset: offset, epoch: epoch, size: size})
	p.bytes += size
	// Tickets are absolute positions so they stay valid across compaction.
	return p.base + len(p.pending) - 1
}

// done marks the record with the given ticket as finished and advances the
// mark over the completed prefix. It returns how many records and bytes left
// the in-flight window.
func (p *partitionTrack) done(ticket int) (records, bytes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.revoked {
		return 0, 0
	}
	i := ticket - p.base
	if i < 0 || i >= len(p.pending) || p.pending[i].done {
		return 0, 0
	}
	p.pending[i].done = true
	for p.head < len(p.pending) && p.pending[p.head].done {
		po := p.pending[p.head]
		p.mark, p.epoch, p.dirty = po.offset+1, po.epoch, true
		records++
		bytes += po.size
		p.head++
	}
	p.bytes -= bytes
	// Compact once the popped prefix dominates, keeping tickets stable.
	if p.head > 1024 && p.head*2 > len(p.pending) {
		n := copy(p.pending, p.pending[p.head:])
		p.pending = p.pending[:n]
		p.base += p.head
		p.head = 0
	}
	return records, bytes
}

// inflight is the number of records added but not yet past the mark.
func (p *partitionTrack) inflight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pending) - p.head
}

// commitMark returns the offset to commit, if it moved since the last call.
func (p *partitionTrack) commitMark() (offset int64, epoch int32, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.dirty || p.mark < 0 {
		return 0, 0, false
	}
	p.dirty = false
	return p.mark, p.epoch, true
}

// markUncommitted re-flags the mark after a failed commit.
func (p *partitionTrack) markUncommitted() {
	p.mu.Lock()
	p.dirty = true
	p.mu.Unlock()
}

// revoke stops the track from accepting acknowledgements and returns the
// in-flight records and bytes it still held, to release them from the
// window.
func (p *partitionTrack) revoke() (records, bytes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.revoked = true
	return len(p.pending) - p.head, p.bytes
}
