package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Temporal links join a fact to the nearest facts of other conversations
// of its bank, within temporalWindow before and after it: at most
// temporalPerSide on each side, so at most four per fact.
const (
	temporalWindow  = 24 * time.Hour
	temporalPerSide = 2
	// temporalScanRows bounds the stored rows one lookup reads on each
	// side. Skipping the rows of the fact's own conversation was what made
	// the old statement quadratic: every fact of a 40 000-sentence event
	// walked past all the others to find another conversation. A
	// conversation denser than this (more rows within the window than the
	// bound, with no other conversation between) gets no temporal link
	// past them; its own facts are linked by entity and by order anyway.
	temporalScanRows = 64
)

// qTemporalCandidates finds, for each distinct (bank, document, time) of a
// batch, the nearest stored facts of other documents before (up to and
// including the time) and after it. It runs before the batch's own facts
// are inserted, so it never reads them; those are paired in Go
// (batchTemporal). Each side reads at most temporalScanRows rows through
// memory_units_mentioned_idx.
const qTemporalCandidates = `SELECT k.i, c.id, c.mentioned_at
	FROM unnest($1::text[], $2::text[], $3::timestamptz[]) WITH ORDINALITY AS k(bank_id, document_id, at, i)
	CROSS JOIN LATERAL (
		(SELECT m.id, m.mentioned_at FROM (
			SELECT id, mentioned_at, document_id, fact_type FROM memory_units
			WHERE bank_id = k.bank_id AND mentioned_at BETWEEN k.at - make_interval(secs => $4) AND k.at
			ORDER BY mentioned_at DESC LIMIT $5) m
		 WHERE m.fact_type <> 'observation' AND m.document_id IS DISTINCT FROM k.document_id
		 ORDER BY m.mentioned_at DESC LIMIT $6)
		UNION ALL
		(SELECT m.id, m.mentioned_at FROM (
			SELECT id, mentioned_at, document_id, fact_type FROM memory_units
			WHERE bank_id = k.bank_id AND mentioned_at > k.at AND mentioned_at <= k.at + make_interval(secs => $4)
			ORDER BY mentioned_at LIMIT $5) m
		 WHERE m.fact_type <> 'observation' AND m.document_id IS DISTINCT FROM k.document_id
		 ORDER BY m.mentioned_at LIMIT $6)) c`

// timeKey is what a fact's temporal neighbours depend on: every fact of
// one message shares it, so a 40 000-sentence message is one lookup.
type timeKey struct {
	bank, doc string
	at        time.Time
}

// temporalCand is one neighbour candidate.
type temporalCand struct {
	id uuid.UUID
	at time.Time
}

// temporalPlan holds a batch's facts grouped by timeKey.
type temporalPlan struct {
	keys  []timeKey
	facts [][]uuid.UUID // per key
}

func planTemporal(evs []*EventRecord) temporalPlan {
	var p temporalPlan
	idx := map[timeKey]int{}
	for _, e := range evs {
		for _, f := range e.Facts {
			if f.FactType == "observation" {
				continue
			}
			k := timeKey{e.BankID, e.DocumentID, f.MentionedAt.UTC()}
			i, ok := idx[k]
			if !ok {
				i = len(p.keys)
				idx[k] = i
				p.keys = append(p.keys, k)
				p.facts = append(p.facts, nil)
			}
			p.facts[i] = append(p.facts[i], f.ID)
		}
	}
	return p
}

// storedTemporal looks up each key's neighbours among the stored facts:
// before[i] nearest first, after[i] nearest first.
func storedTemporal(ctx context.Context, tx pgx.Tx, p temporalPlan) (before, after [][]temporalCand, err error) {
	n := len(p.keys)
	before, after = make([][]temporalCand, n), make([][]temporalCand, n)
	if n == 0 {
		return before, after, nil
	}
	banks, docs, ats := make([]string, n), make([]string, n), make([]time.Time, n)
	for i, k := range p.keys {
		banks[i], docs[i], ats[i] = k.bank, k.doc, k.at
	}
	rows, err := tx.Query(ctx, qTemporalCandidates, banks, docs, ats, temporalWindow.Seconds(), temporalScanRows, temporalPerSide)
	if err != nil {
		return nil, nil, fmt.Errorf("temporal candidates: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int64
		var c temporalCand
		if err := rows.Scan(&i, &c.id, &c.at); err != nil {
			return nil, nil, fmt.Errorf("temporal candidates: %w", err)
		}
		k := int(i - 1)
		if c.at.After(p.keys[k].at) {
			after[k] = append(after[k], c)
		} else {
			before[k] = append(before[k], c)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("temporal candidates: %w", err)
	}
	return before, after, nil
}

// batchTemporal finds each key's neighbours among the batch's own facts,
// in O(n log n): the facts of a bank sorted by time, with, at every
// position, where the run of consecutive facts of its document starts and
// ends, so that a lookup jumps over its own conversation instead of
// walking it.
func batchTemporal(p temporalPlan) (before, after [][]temporalCand) {
	before, after = make([][]temporalCand, len(p.keys)), make([][]temporalCand, len(p.keys))
	type entry struct {
		doc string
		at  time.Time
		id  uuid.UUID
	}
	byBank := map[string][]entry{}
	for i, k := range p.keys {
		for _, id := range p.facts[i] {
			byBank[k.bank] = append(byBank[k.bank], entry{k.doc, k.at, id})
		}
	}
	sorted := map[string][]entry{}
	runStart, runEnd := map[string][]int{}, map[string][]int{}
	for bank, es := range byBank {
		slices.SortFunc(es, func(a, b entry) int {
			return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.doc, b.doc), slices.Compare(a.id[:], b.id[:]))
		})
		rs, re := make([]int, len(es)), make([]int, len(es))
		for j := range es {
			if j > 0 && es[j-1].doc == es[j].doc {
				rs[j] = rs[j-1]
			} else {
				rs[j] = j
			}
		}
		for j := len(es) - 1; j >= 0; j-- {
			if j < len(es)-1 && es[j+1].doc == es[j].doc {
				re[j] = re[j+1]
			} else {
				re[j] = j
			}
		}
		sorted[bank], runStart[bank], runEnd[bank] = es, rs, re
	}
	for i, k := range p.keys {
		es, rs, re := sorted[k.bank], runStart[k.bank], runEnd[k.bank]
		// Before: at or before k.at, nearest first.
		j := sort.Search(len(es), func(j int) bool { return es[j].at.After(k.at) }) - 1
		for j >= 0 && len(before[i]) < temporalPerSide {
			if es[j].doc == k.doc {
				j = rs[j] - 1
				continue
			}
			if k.at.Sub(es[j].at) > temporalWindow {
				break
			}
			before[i] = append(before[i], temporalCand{es[j].id, es[j].at})
			j--
		}
		// After: strictly later, nearest first.
		j = sort.Search(len(es), func(j int) bool { return es[j].at.After(k.at) })
		for j < len(es) && len(after[i]) < temporalPerSide {
			if es[j].doc == k.doc {
				j = re[j] + 1
				continue
			}
			if es[j].at.Sub(k.at) > temporalWindow {
				break
			}
			after[i] = append(after[i], temporalCand{es[j].id, es[j].at})
			j++
		}
	}
	return before, after
}

// nearest merges two nearest-first candidate lists and keeps the best n.
func nearest(at time.Time, a, b []temporalCand, n int) []temporalCand {
	all := append(slices.Clip(a), b...)
	slices.SortStableFunc(all, func(x, y temporalCand) int {
		return cmp.Compare(x.at.Sub(at).Abs(), y.at.Sub(at).Abs())
	})
	return all[:min(n, len(all))]
}

// temporalLinks builds the batch's temporal links: for every fact, the
// nearest temporalPerSide facts of other conversations on each side,
// stored or in the batch. The work is one bounded lookup per timeKey plus
// a sort of the batch; the links are at most four per fact.
func temporalLinks(ctx context.Context, tx pgx.Tx, evs []*EventRecord) (linkArrays, error) {
	var out linkArrays
	p := planTemporal(evs)
	sb, sa, err := storedTemporal(ctx, tx, p)
	if err != nil {
		return out, err
	}
	bb, ba := batchTemporal(p)
	for i, k := range p.keys {
		for _, c := range append(nearest(k.at, sb[i], bb[i], temporalPerSide), nearest(k.at, sa[i], ba[i], temporalPerSide)...) {
			w := float32(1 - c.at.Sub(k.at).Abs().Seconds()/temporalWindow.Seconds())
			for _, from := range p.facts[i] {
				out.add(k.bank, from, c.id, "temporal", w)
			}
		}
	}
	return out, nil
}

// linkArrays are memory_links rows as the columns qInsertLinks takes.
type linkArrays struct {
	banks, types []string
	from, to     []uuid.UUID
	weights      []float32
}

func (l *linkArrays) add(bank string, from, to uuid.UUID, typ string, w float32) {
	l.banks, l.from, l.to, l.types, l.weights = append(l.banks, bank), append(l.from, from), append(l.to, to), append(l.types, typ), append(l.weights, w)
}

func (l *linkArrays) insert(ctx context.Context, tx pgx.Tx, what string) error {
	if len(l.from) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, qInsertLinks, l.banks, l.from, l.to, l.types, l.weights); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
