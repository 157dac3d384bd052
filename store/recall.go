package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"
)

// The statements of recall's four arms and of its hydration. Recall
// (package recall) decides what to ask and how to score it; these run it.

// unitFilter is shared by every arm: the bank, valid facts only, and the
// request's types and tags. Every arm query binds $1 bank, $2 types, $3
// tags and $4 tags mode, so the fragment is a compile-time constant.
// Non-strict modes keep untagged facts (see TagsAny).
const unitFilter = `m.bank_id = $1 AND m.state = 'valid'
	AND (cardinality($2::text[]) = 0 OR m.fact_type = ANY($2::text[]))
	AND (cardinality($3::text[]) = 0 OR CASE $4::text
		WHEN 'any'        THEN m.tags && $3::text[] OR m.tags = '{}'
		WHEN 'all'        THEN m.tags @> $3::text[] OR m.tags = '{}'
		WHEN 'any_strict' THEN m.tags && $3::text[]
		WHEN 'all_strict' THEN m.tags @> $3::text[]
		ELSE m.tags @> $3::text[] AND m.tags <@ $3::text[] END)`

const (
	// set_config(…, true) is SET LOCAL with bound values: it lasts until
	// the transaction ends, so a pooled connection never keeps them.
	// relaxed_order lets the HNSW scan continue past ef_search until
	// enough rows pass the filter; results may come slightly out of
	// order, so the caller re-sorts by distance.
	// force_custom_plan: a generic plan of a filtered ORDER BY embedding
	// <=> $n cannot use the HNSW index, and the semantic arm's statement
	// (the probe and its exact fallback) looked cheap enough generic that
	// the server switched to it after five executions: an exact sort of the
	// whole bank, 142 ms a recall in a bank of 133 592 facts.
	qSetEf = `SELECT set_config('transaction_read_only', 'on', true),
		set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'relaxed_order', true),
		set_config('plan_cache_mode', 'force_custom_plan', true)`
	// qSetGeneric runs the statement after it on its cached generic plan.
	// The arms' statements other than the HNSW ones have one good plan
	// whatever the parameters (index look-ups by id, entity and bank), but
	// with the default plan_cache_mode the server plans them again on
	// every execution, because a custom plan looks cheaper than the
	// generic one, and planning cost more than running (docs/BENCHMARKS.md
	// has the numbers). The HNSW queries keep custom plans: the generic
	// plan of an ORDER BY embedding <=> $n under filters does not use the
	// index.
	qSetGeneric = `SELECT set_config('transaction_read_only', 'on', true),
		set_config('plan_cache_mode', 'force_generic_plan', true)`
	// qSemanticArm is the HNSW probe, and the bank's rows read exactly
	// when the probe comes back short: in a table many banks share, the
	// iterative scan stops after hnsw.max_scan_tuples index tuples, and a
	// bank whose rows lie far from the query then has fewer than the limit
	// among them. The second branch's condition is a one-time filter, so
	// it is never executed while the probe fills the limit; its distance
	// expression (+ 0) is one the index cannot serve.
	qSemanticArm = `WITH h AS MATERIALIZED (
		SELECT m.id, m.embedding <=> $5::halfvec AS d
		FROM memory_units m
		WHERE ` + unitFilter + ` AND m.embedding IS NOT NULL
		ORDER BY m.embedding <=> $5::halfvec
		LIMIT $6)
	SELECT id, 1 - d AS sim FROM h WHERE (SELECT count(*) FROM h) >= $6
	UNION ALL
	SELECT id, 1 - d FROM (
		SELECT m.id, (m.embedding <=> $5::halfvec) + 0 AS d
		FROM memory_units m
		WHERE ` + unitFilter + ` AND m.embedding IS NOT NULL
		ORDER BY 2
		LIMIT $6) e
	WHERE (SELECT count(*) FROM h) < $6`

	// qSemanticExact reads the bank's rows and sorts them by distance to
	// $5, best first, ties by id: for a bank of a few thousand facts that
	// costs less than the HNSW probe, which in a table many banks share
	// visits and filters out the other banks' tuples, and it is exact. It
	// runs on its generic plan: the distance expression (+ 0) is one the
	// index cannot serve, so the plan is a bank index and a top-N sort
	// whatever the parameters.
	qSemanticExact = `SELECT m.id, 1 - ((m.embedding <=> $5::halfvec) + 0) AS sim
	FROM memory_units m
	WHERE ` + unitFilter + ` AND m.embedding IS NOT NULL
	ORDER BY sim DESC, m.id
	LIMIT $6`
)

const (
	qGraphAliasSeeds = `SELECT coalesce(e.merged_into, e.id), a.alias_key
	FROM entity_aliases a JOIN entities e ON e.id = a.entity_id
	WHERE a.bank_id = $1 AND a.alias_key = ANY($2::text[]) AND e.bank_id = $1`

	// Trigram similarity catches misspellings and forms the alias table
	// lacks ("Jon Smith" for "John Smith"); % uses pg_trgm's threshold
	// and the GIN index on lower(canonical_name).
	qGraphNameSeeds = `SELECT coalesce(e.merged_into, e.id), max(similarity(lower(e.canonical_name), p.p))
	FROM unnest($2::text[]) AS p(p) JOIN entities e ON lower(e.canonical_name) % p.p
	WHERE e.bank_id = $1
	GROUP BY 1`

	// qGraphGivenSeeds finds the people whose full Han name is a
	// one-character surname and the given name a query nickname stands
	// for (阿洋 → 刘洋): a few rows of the bank's persons, read through
	// the (bank_id, kind) index.
	qGraphGivenSeeds = `SELECT coalesce(e.merged_into, e.id)
	FROM entities e
	WHERE e.bank_id = $1 AND e.kind = 'person' AND e.canonical_name LIKE ANY($2::text[])`

	// qGraphExpand walks two hops. Seed entities are the named ones
	// ($5/$6) and those of the facts nearest to the query ($7 ids, $8
	// similarities: the semantic arm's best, see nearestFacts), weighted
	// by $10 times their similarity, that are mentioned at most $12
	// times (counting the mentions not yet folded into mention_count):
	// that a similar fact mentions Seattle, named in a thousand
	// facts, says nothing about which of them matter, the way a common
	// word says nothing in full-text search. An entity seeded both ways
	// keeps its best weight.
	//
	// Hop 1: facts that mention a seed entity, scored by the summed
	// weights of the seeds they mention (a fact naming both people asked
	// about beats one naming either). Each entity lends a bounded number
	// of facts, so that a city or a spouse mentioned by thousands of
	// facts cannot make every recall aggregate all of them. An entity the
	// query names in full (weight 1) lends its $11 most recently stored
	// facts, by unit_entities.seq (storage order; a merge keeps it), read
	// from unit_entities_seq_idx: $11 index entries and no memory_units
	// row, however big the entity is. (ctid order, used before, is not
	// storage order once rows are rewritten: a merge's moved rows came
	// first.) Weaker seeds (a given name alone that fits forty people, a
	// trigram match, the entities of the nearest facts, at most $12
	// mentions) lend their $13 most recent ones the same way; $13 shrinks
	// as they multiply. The seq (t) also breaks ties between equal scores
	// later, newest first.
	//
	// Hop 2: facts linked to the best $9/2 hop-1 facts or to the nearest
	// facts, scored by the parent's score times the link weight, damped
	// by link type: causal links carry the most meaning, entity and
	// temporal links the least (entity links repeat hop 1, temporal ones
	// are only nearness).
	//
	// Only the best 1.5·$9 facts of both hops are looked up in memory_units
	// for the request's filters: each lookup is a random read, and they
	// were most of the arm's time. Seed entities belong to the bank, so
	// both hops stay inside it; the final filter drops invalidated facts.
	qGraphExpand = `WITH useeds AS (
		SELECT u.id, u.score FROM unnest($7::uuid[], $8::float8[]) AS u(id, score)),
	seeds AS (
		SELECT x.entity_id, max(x.w) AS w, bool_or(x.named) AS named FROM (
			SELECT s.entity_id, s.w, s.w >= 1 AS named FROM unnest($5::uuid[], $6::float8[]) AS s(entity_id, w)
			UNION ALL
			SELECT ue.entity_id, $10 * u.score, false FROM useeds u JOIN unit_entities ue ON ue.unit_id = u.id
			JOIN entities e ON e.id = ue.entity_id
			WHERE e.mention_count + COALESCE((SELECT sum(d.mentions) FROM entity_mention_deltas d WHERE d.entity_id = e.id), 0) <= $12) x
		GROUP BY x.entity_id),
	hop1 AS (
		SELECT f.unit_id AS id, sum(s.w) AS score, max(f.t) AS t
		FROM seeds s CROSS JOIN LATERAL (
			(SELECT ue.unit_id, ue.seq AS t FROM unit_entities ue
			 WHERE s.named AND ue.entity_id = s.entity_id ORDER BY ue.seq DESC LIMIT $11)
			UNION ALL
			(SELECT ue.unit_id, ue.seq FROM unit_entities ue
			 WHERE NOT s.named AND ue.entity_id = s.entity_id ORDER BY ue.seq DESC LIMIT $13)) f
		GROUP BY f.unit_id),
	starts AS (
		(SELECT h.id, h.score FROM hop1 h ORDER BY h.score DESC, h.t DESC LIMIT $9 / 2)
		UNION ALL
		SELECT * FROM useeds),
	hop2 AS (
		SELECT n.id, max(st.score * n.weight * CASE n.link_type
			WHEN 'entity' THEN 0.3 WHEN 'temporal' THEN 0.3 WHEN 'semantic' THEN 0.5 ELSE 0.7 END) AS score
		FROM starts st
		CROSS JOIN LATERAL (
			SELECT l.to_id AS id, l.weight, l.link_type FROM memory_links l WHERE l.from_id = st.id
			UNION ALL
			SELECT l.from_id, l.weight, l.link_type FROM memory_links l WHERE l.to_id = st.id) n
		GROUP BY n.id),
	scored AS (
		SELECT id, sum(score) AS score, max(t) AS t
		FROM (SELECT * FROM hop1 UNION ALL SELECT id, score, NULL FROM hop2) x
		GROUP BY id
		ORDER BY 2 DESC, 3 DESC NULLS LAST
		LIMIT $9 + $9 / 2)
	SELECT m.id, sc.score
	FROM scored sc JOIN memory_units m ON m.id = sc.id
	WHERE ` + unitFilter + ` AND sc.score > 0
	ORDER BY sc.score DESC, m.mentioned_at DESC
	LIMIT $9`
)

// termQuery turns one term into a tsquery. plainto_tsquery never raises a
// syntax error and treats its input as plain words, so user text cannot
// inject tsquery operators. The English config stems words ("orders" →
// order) to match the text part; the simple config matches search_aux
// (entity names, CJK bigrams) verbatim. A code such as "A-7731-QX" becomes
// the AND of its parts as the parser split them at indexing time ('-7731'
// & 'qx'), so it matches exactly what the document parser produced.
const termQuery = `(plainto_tsquery('english', x.term) || plainto_tsquery('simple', x.term))`

const (
	// qKeywordDF counts, per term, the bank's facts that contain it, up to
	// $3: one GIN probe each, and at most $3 heap visits, because the
	// bank and state filters are not in the index. A term found $3 times
	// is common enough that its exact count changes nothing but the cost.
	// ts_stat would scan the whole bank.
	qKeywordDF = `SELECT x.term, (SELECT count(*) FROM (
		SELECT 1 FROM memory_units m WHERE m.bank_id = $1 AND m.state = 'valid' AND m.search_tsv @@ ` + termQuery + `
		LIMIT $3) c)
	FROM unnest($2::text[]) AS x(term)`

	// qKeywordBankSize is N of the IDF. It reads the whole bank's index,
	// so its answer is cached (see bankSizeTTL).
	qKeywordBankSize = `SELECT count(*) FROM memory_units m WHERE m.bank_id = $1 AND m.state = 'valid'`

	// qKeywordArm finds facts through the GIN index with the match terms
	// $8, ORed (or ANDed when $9 is 'and', see matchTerms), taking at
	// most $10 of them so a common word cannot make it rank a whole bank.
	// Each row then sums the IDF of all the kept terms $5/$6 it contains,
	// and ts_rank_cd over their OR (title-weight A = text, B = aux)
	// breaks ties by proximity and density. tsquery's text form re-parses
	// exactly, since it quotes every lexeme. Ordering by IDF first puts
	// the fact with the rare id above facts that repeat a common word.
	qKeywordArm = `WITH t AS (
		SELECT x.term, x.idf, ` + termQuery + ` AS tq
		FROM unnest($5::text[], $6::float8[]) AS x(term, idf)),
	u AS (SELECT * FROM t WHERE numnode(tq) > 0),
	f AS (SELECT string_agg('(' || tq::text || ')', ' | ')::tsquery AS q FROM u),
	mt AS (SELECT ` + termQuery + ` AS tq FROM unnest($8::text[]) AS x(term)),
	fm AS (SELECT string_agg('(' || tq::text || ')', CASE $9::text WHEN 'and' THEN ' & ' ELSE ' | ' END)::tsquery AS q
		FROM mt WHERE numnode(tq) > 0),
	c AS (
		SELECT m.id, m.search_tsv, m.mentioned_at
		FROM fm, memory_units m
		WHERE fm.q IS NOT NULL AND m.search_tsv @@ fm.q AND ` + unitFilter + `
		LIMIT $10)
	SELECT c.id, s.idf * (1 + ts_rank_cd('{0.1, 0.2, 0.4, 1.0}', c.search_tsv, f.q, 1)) AS score
	FROM f, c
	CROSS JOIN LATERAL (SELECT coalesce(sum(u.idf), 0) AS idf FROM u WHERE c.search_tsv @@ u.tq) s
	ORDER BY score DESC, c.mentioned_at DESC
	LIMIT $7`
)

// qTemporalArm finds facts near the query's periods with index range
// scans only: for each period w ($5 starts, $6 ends, $8 row limits), the
// facts whose occurrence starts in it, those whose occurrence began up to
// $9 seconds earlier and reaches into it (the third column of the
// (bank, occurred_start, occurred_end) index checks that without the
// heap), and those mentioned in it. Each scan takes the newest $8 rows, so
// a period of months costs what a day does. The exact placement is scored
// in Go (temporalScore). An occurrence that began more than $9 before the
// period (a fact about "2024" asked about as "last March") is not found
// here; the other arms still can.
const qTemporalArm = `WITH w AS (
	SELECT * FROM unnest($5::timestamptz[], $6::timestamptz[], $8::int[]) AS w(s, e, lim))
SELECT x.* FROM w CROSS JOIN LATERAL (
	SELECT m.id, m.occurred_start, m.occurred_end, m.mentioned_at, ` + temporalSimExpr + `
	FROM memory_units m
	WHERE ` + unitFilter + ` AND m.occurred_start >= w.s AND m.occurred_start < w.e
	ORDER BY m.occurred_start DESC LIMIT w.lim) x
UNION
SELECT x.* FROM w CROSS JOIN LATERAL (
	SELECT m.id, m.occurred_start, m.occurred_end, m.mentioned_at, ` + temporalSimExpr + `
	FROM memory_units m
	WHERE ` + unitFilter + ` AND m.occurred_start >= w.s - make_interval(secs => $9) AND m.occurred_start < w.s
		AND m.occurred_end > w.s
	ORDER BY m.occurred_start DESC LIMIT w.lim) x
UNION
SELECT x.* FROM w CROSS JOIN LATERAL (
	SELECT m.id, m.occurred_start, m.occurred_end, m.mentioned_at, ` + temporalSimExpr + `
	FROM memory_units m
	WHERE ` + unitFilter + ` AND m.mentioned_at >= w.s AND m.mentioned_at < w.e
	ORDER BY m.mentioned_at DESC LIMIT w.lim) x`

// temporalSimExpr is the similarity to the query, 0 without an embedding.
const temporalSimExpr = `CASE WHEN $7::halfvec IS NULL OR m.embedding IS NULL THEN 0 ELSE 1 - (m.embedding <=> $7::halfvec) END AS sim`

// qHydrate loads every fused candidate in one round trip, with its entities
// and its similarity to the query (which arms other than semantic do not
// compute, and the final score needs for all), and its embedding only when
// $4 asks for it (diversification), since it is the bulk of a row. The bank and state are
// checked again: a fact invalidated while the arms ran is not returned.
const qHydrate = `SELECT m.id, m.text, m.fact_type, m.context, m.occurred_start, m.occurred_end, m.mentioned_at,
	coalesce(m.document_id, ''), m.tags, m.metadata, coalesce(m.source_event_id, ''), m.proof_count, coalesce(m.trend, ''),
	CASE WHEN $3::halfvec IS NULL OR m.embedding IS NULL THEN 0 ELSE 1 - (m.embedding <=> $3::halfvec) END,
	coalesce(e.ids, '{}'), coalesce(e.names, '{}'), coalesce(e.kinds, '{}'),
	CASE WHEN $4::bool THEN m.embedding END
FROM memory_units m
LEFT JOIN LATERAL (
	SELECT array_agg(en.id ORDER BY en.canonical_name) AS ids,
	       array_agg(en.canonical_name ORDER BY en.canonical_name) AS names,
	       array_agg(en.kind ORDER BY en.canonical_name) AS kinds
	FROM unit_entities ue JOIN entities en ON en.id = ue.entity_id
	WHERE ue.unit_id = m.id) e ON true
WHERE m.id = ANY($1::uuid[]) AND m.bank_id = $2 AND m.state = 'valid'`

// RecallFilter is what every arm of a recall filters by: the bank, valid
// facts only, and the request's types and tags ($1–$4 of each statement).
type RecallFilter struct {
	BankID string
	Types  []string
	Tags   []string
	// TagsMode is any, all, any_strict, all_strict or exact.
	TagsMode string
}

func (f RecallFilter) args(more ...any) []any {
	return append([]any{f.BankID, f.Types, f.Tags, f.TagsMode}, more...)
}

// Scored is a fact an arm found, with the arm's score.
type Scored struct {
	ID    UUID
	Score float64
}

func scanScored(out *[]Scored) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		var c Scored
		if err := rows.Scan(&c.ID, &c.Score); err != nil {
			return err
		}
		*out = append(*out, c)
		return nil
	}
}

// RecallSemantic returns the limit facts nearest to vec under f, with
// their cosine similarity, in the order the index returned them (relaxed
// order: the caller sorts). ef is hnsw.ef_search.
func (s *Store) RecallSemantic(ctx context.Context, f RecallFilter, vec []float32, ef, limit int) ([]Scored, error) {
	var out []Scored
	err := s.hnswQuery(ctx, ef, qSemanticArm, f.args(pgvector.NewHalfVector(vec), limit), scanScored(&out))
	if err != nil {
		return nil, fmt.Errorf("semantic search bank %s: %w", f.BankID, err)
	}
	return out, nil
}

// RecallSemanticExact returns the limit facts nearest to vec under f,
// with their cosine similarity, best first, ties by id, by reading the
// bank's rows (see qSemanticExact): for small banks.
func (s *Store) RecallSemanticExact(ctx context.Context, f RecallFilter, vec []float32, limit int) ([]Scored, error) {
	var out []Scored
	err := s.genericQuery(ctx, qSemanticExact, f.args(pgvector.NewHalfVector(vec), limit), scanScored(&out))
	if err != nil {
		return nil, fmt.Errorf("exact semantic search bank %s: %w", f.BankID, err)
	}
	return out, nil
}

// GraphSeeds are the entities a query's name spans may denote.
type GraphSeeds struct {
	// ByKey maps each alias key found to its entities (merged ones
	// resolved to the entity they were merged into).
	ByKey map[string][]UUID
	// Trigram is the best trigram similarity of each entity whose
	// canonical name is close to a phrase.
	Trigram map[UUID]float64
	// Given are the persons whose Han name matches a given-name pattern.
	Given []UUID
}

// RecallGraphSeeds looks up the alias keys, the trigram phrases and the
// given-name LIKE patterns of a query in one round trip, on generic plans.
// Phrases and givenLike may be empty; their look-ups are then skipped.
func (s *Store) RecallGraphSeeds(ctx context.Context, bank string, keys, phrases, givenLike []string) (GraphSeeds, error) {
	seeds := GraphSeeds{ByKey: map[string][]UUID{}, Trigram: map[UUID]float64{}}
	var b pgx.Batch
	b.Queue(qSetGeneric)
	b.Queue(qGraphAliasSeeds, bank, keys)
	if len(phrases) > 0 {
		b.Queue(qGraphNameSeeds, bank, phrases)
	}
	if len(givenLike) > 0 {
		b.Queue(qGraphGivenSeeds, bank, givenLike)
	}
	br := s.pool.SendBatch(ctx, &b)
	err := func() error {
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("graph seeds: set query options: %w", err)
		}
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("graph alias seeds: %w", err)
		}
		var id UUID
		var key string
		if _, err := pgx.ForEachRow(rows, []any{&id, &key}, func() error {
			seeds.ByKey[key] = append(seeds.ByKey[key], id)
			return nil
		}); err != nil {
			return fmt.Errorf("graph alias seeds: %w", err)
		}
		if len(phrases) > 0 {
			if rows, err = br.Query(); err != nil {
				return fmt.Errorf("graph name seeds: %w", err)
			}
			var sim float64
			if _, err := pgx.ForEachRow(rows, []any{&id, &sim}, func() error {
				seeds.Trigram[id] = max(seeds.Trigram[id], sim)
				return nil
			}); err != nil {
				return fmt.Errorf("graph name seeds: %w", err)
			}
		}
		if len(givenLike) > 0 {
			if rows, err = br.Query(); err != nil {
				return fmt.Errorf("graph given-name seeds: %w", err)
			}
			if _, err := pgx.ForEachRow(rows, []any{&id}, func() error {
				seeds.Given = append(seeds.Given, id)
				return nil
			}); err != nil {
				return fmt.Errorf("graph given-name seeds: %w", err)
			}
		}
		return br.Close()
	}()
	if err != nil {
		return GraphSeeds{}, fmt.Errorf("bank %s: %w", bank, err)
	}
	return seeds, nil
}

// GraphWalk is what the graph arm's two-hop walk starts from and how much
// it may read (see qGraphExpand).
type GraphWalk struct {
	// Entities and Weights are the named seed entities ($5, $6).
	Entities []UUID
	Weights  []float64
	// NearIDs and NearSims are the facts nearest to the query ($7, $8).
	NearIDs  []UUID
	NearSims []float64
	// Limit is the arm's pool ($9); SemanticWeight scales the nearest
	// facts' entities ($10).
	Limit          int
	SemanticWeight float64
	// PerEntity ($11) and PerWeakEntity ($13) bound the facts one named
	// or weak seed entity lends hop 1; MentionCap ($12) is the most
	// mentions an entity of a nearest fact may have and still seed.
	PerEntity, MentionCap, PerWeakEntity int
}

// RecallGraph walks two hops from the seeds and returns the best facts
// under f, best first.
func (s *Store) RecallGraph(ctx context.Context, f RecallFilter, w GraphWalk) ([]Scored, error) {
	var out []Scored
	args := f.args(w.Entities, w.Weights, w.NearIDs, w.NearSims, w.Limit, w.SemanticWeight, w.PerEntity, w.MentionCap, w.PerWeakEntity)
	if err := s.genericQuery(ctx, qGraphExpand, args, scanScored(&out)); err != nil {
		return nil, fmt.Errorf("graph expand bank %s: %w", f.BankID, err)
	}
	return out, nil
}

// RecallTermFrequencies counts, per term, the bank's valid facts that
// contain it, up to limit.
func (s *Store) RecallTermFrequencies(ctx context.Context, bank string, terms []string, limit int) (map[string]int64, error) {
	got := make(map[string]int64, len(terms))
	err := s.genericQuery(ctx, qKeywordDF, []any{bank, terms, limit}, func(row pgx.Rows) error {
		var term string
		var df int64
		if err := row.Scan(&term, &df); err != nil {
			return err
		}
		got[term] = df
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("keyword document frequency bank %s: %w", bank, err)
	}
	return got, nil
}

// RecallBankSize is the bank's number of valid facts.
func (s *Store) RecallBankSize(ctx context.Context, bank string) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, qKeywordBankSize, bank).Scan(&n); err != nil {
		return 0, fmt.Errorf("bank size %s: %w", bank, err)
	}
	return n, nil
}

// KeywordSearch is a full-text search (see qKeywordArm).
type KeywordSearch struct {
	// Terms and IDFs are the kept terms and their weights ($5, $6).
	Terms []string
	IDFs  []float64
	// Limit is how many facts to return ($7).
	Limit int
	// Match are the terms that find rows ($8), ORed or, with Mode "and",
	// ANDed ($9).
	Match []string
	Mode  string
	// RowBudget bounds the rows ranked ($10).
	RowBudget int
}

// RecallKeyword runs the full-text arm and returns its facts, best first.
func (s *Store) RecallKeyword(ctx context.Context, f RecallFilter, k KeywordSearch) ([]Scored, error) {
	var out []Scored
	args := f.args(k.Terms, k.IDFs, k.Limit, k.Match, k.Mode, k.RowBudget)
	if err := s.genericQuery(ctx, qKeywordArm, args, scanScored(&out)); err != nil {
		return nil, fmt.Errorf("keyword search bank %s: %w", f.BankID, err)
	}
	return out, nil
}

// TemporalFact is a fact found in or near a period, with what its
// temporal score needs.
type TemporalFact struct {
	ID                         UUID
	OccurredStart, OccurredEnd *time.Time
	MentionedAt                time.Time
	// Sim is the cosine similarity to the query, 0 without a vector.
	Sim float64
}

// TemporalSearch is what the temporal arm scans (see qTemporalArm).
type TemporalSearch struct {
	// Starts, Ends and Limits are the periods and each one's row limit.
	Starts, Ends []time.Time
	Limits       []int32
	// Vec is the query embedding; nil scores every similarity 0.
	Vec []float32
	// Lookback is how long before a period an occurrence may have begun
	// and still be found overlapping it.
	Lookback time.Duration
}

// RecallTemporal returns the facts that occurred or were mentioned in the
// periods.
func (s *Store) RecallTemporal(ctx context.Context, f RecallFilter, t TemporalSearch) ([]TemporalFact, error) {
	var vec any
	if t.Vec != nil {
		vec = pgvector.NewHalfVector(t.Vec)
	}
	var out []TemporalFact
	args := f.args(t.Starts, t.Ends, vec, t.Limits, t.Lookback.Seconds())
	err := s.genericQuery(ctx, qTemporalArm, args, func(row pgx.Rows) error {
		var tf TemporalFact
		if err := row.Scan(&tf.ID, &tf.OccurredStart, &tf.OccurredEnd, &tf.MentionedAt, &tf.Sim); err != nil {
			return err
		}
		out = append(out, tf)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("temporal search bank %s: %w", f.BankID, err)
	}
	return out, nil
}

// RecallFact is a fact as recall returns it, with the entities it
// mentions (sorted by name) and its similarity to the query.
type RecallFact struct {
	ID                         UUID
	Text, Type, Context        string
	OccurredStart, OccurredEnd *time.Time
	MentionedAt                time.Time
	DocumentID                 string
	Tags                       []string
	Metadata                   map[string]string
	SourceEventID              string
	ProofCount                 int
	Trend                      string
	// Sim is the cosine similarity to the query, 0 without a vector.
	Sim                      float64
	EntityIDs                []UUID
	EntityNames, EntityKinds []string
	// Embedding is only loaded when asked for.
	Embedding []float32
}

// RecallFacts loads the bank's valid facts among ids in one round trip. A
// fact invalidated meanwhile, or of another bank, is not returned. vec may
// be nil; withEmbedding loads the embeddings too (the bulk of a row).
func (s *Store) RecallFacts(ctx context.Context, bank string, ids []UUID, vec []float32, withEmbedding bool) ([]RecallFact, error) {
	var qv any
	if vec != nil {
		qv = pgvector.NewHalfVector(vec)
	}
	out := make([]RecallFact, 0, len(ids))
	err := s.genericQuery(ctx, qHydrate, []any{ids, bank, qv, withEmbedding}, func(row pgx.Rows) error {
		var h RecallFact
		var meta map[string]any
		var emb *pgvector.HalfVector
		err := row.Scan(&h.ID, &h.Text, &h.Type, &h.Context, &h.OccurredStart, &h.OccurredEnd, &h.MentionedAt, &h.DocumentID, &h.Tags,
			&meta, &h.SourceEventID, &h.ProofCount, &h.Trend, &h.Sim, &h.EntityIDs, &h.EntityNames, &h.EntityKinds, &emb)
		if err != nil {
			return err
		}
		if emb != nil {
			h.Embedding = emb.Slice()
		}
		h.Metadata = stringMap(meta)
		out = append(out, h)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hydrate %d facts of bank %s: %w", len(ids), bank, err)
	}
	return out, nil
}

// hnswQuery runs sql with the budget's HNSW settings in one round trip.
func (s *Store) hnswQuery(ctx context.Context, ef int, sql string, args []any, each func(pgx.Rows) error) error {
	return s.settingsQuery(ctx, qSetEf, []any{strconv.Itoa(ef)}, sql, args, each)
}

// genericQuery runs sql on its generic plan (see qSetGeneric), read-only,
// in one round trip.
func (s *Store) genericQuery(ctx context.Context, sql string, args []any, each func(pgx.Rows) error) error {
	return s.settingsQuery(ctx, qSetGeneric, nil, sql, args, each)
}

// settingsQuery runs the set_config statement set and then sql as one
// batch, which the server runs as one implicit transaction: the
// set_config(…, true) values hold for the query and end with it, so a
// pooled connection never keeps them, and the transaction is read-only
// because recall must never write. A BEGIN/COMMIT pair would cost two
// more round trips, each of which waits for a CPU on a busy machine.
func (s *Store) settingsQuery(ctx context.Context, set string, setArgs []any, sql string, args []any, each func(pgx.Rows) error) error {
	var b pgx.Batch
	b.Queue(set, setArgs...)
	b.Queue(sql, args...)
	br := s.pool.SendBatch(ctx, &b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return fmt.Errorf("set query options: %w", err)
	}
	rows, err := br.Query()
	if err == nil {
		for rows.Next() {
			if err = each(rows); err != nil {
				break
			}
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// stringMap flattens metadata to strings, as the API promises: writers
// store strings, but a hand-edited row may hold numbers or objects, which
// keep their JSON text rather than failing the recall.
func stringMap(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
			continue
		}
		b, _ := json.Marshal(v)
		out[k] = string(b)
	}
	return out
}
