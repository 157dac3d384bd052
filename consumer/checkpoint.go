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
	handed  int  // records handed to the sink and not yet done
	dirty   bool // mark moved since the last commit
	closed  bool // no more records are handed over (revoking or stopping)
	revoked bool // acknowledgements after revocation are ignored
}

type pendingOffset struct {
	offset int64
	epoch  int32
	size   int
	handed bool
	done   bool
}

func newPartitionTrack() *partitionTrack { return &partitionTrack{mark: -1} }

// add registers a fetched record; offsets must be added in increasing order.
// It refuses (ok false) once the track is closed: a record of a poll that
// raced a revocation belongs to no track, and its partition's next owner
// fetches it again from the committed offset.
func (p *partitionTrack) add(offset int64, epoch int32, size int) (ticket int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, false
	}
	if n := len(p.pending); (n > 0 && offset <= p.pending[n-1].offset) || (p.mark >= 0 && offset < p.mark) {
		// Offsets only grow within one assignment: an offset at or below
		// one already tracked is a second delivery of it, and taking it
		// would let the mark regress.
		return 0, false
	}
	p.pending = append(p.pending, pendingOffset{offset: offset, epoch: epoch, size: size})
	p.bytes += size
	// Tickets are absolute positions so they stay valid across compaction.
	return p.base + len(p.pending) - 1, true
}

// hand records that the record with the given ticket goes to the sink now.
// It returns false once the track is closed: the rest of a poll is then not
// handed over, and the mark never passes it.
func (p *partitionTrack) hand(ticket int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := ticket - p.base
	if p.closed || i < 0 || i >= len(p.pending) {
		return false
	}
	p.pending[i].handed = true
	p.handed++
	return true
}

// unhand undoes hand for a record the sink refused.
func (p *partitionTrack) unhand(ticket int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := ticket - p.base; i >= 0 && i < len(p.pending) && p.pending[i].handed && !p.pending[i].done {
		p.pending[i].handed = false
		p.handed--
	}
}

// close stops the track from handing over more records.
func (p *partitionTrack) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

// inSink is the number of records handed to the sink and not yet done.
func (p *partitionTrack) inSink() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.handed
}

// done marks the record with the given ticket as finished and advances the
// mark over the completed prefix. It returns how many records and bytes left
// the in-flight window.
func (p *partitionTrack) done(ticket int) (records, bytes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := ticket - p.base
	if i < 0 || i >= len(p.pending) || p.pending[i].done {
		return 0, 0
	}
	if p.pending[i].handed {
		p.handed--
	}
	p.pending[i].done = true
	if p.revoked {
		// The window already released this record with the track.
		return 0, 0
	}
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
	p.closed, p.revoked = true, true
	return len(p.pending) - p.head, p.bytes
}
