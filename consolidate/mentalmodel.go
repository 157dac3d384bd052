package consolidate

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/google/uuid"

	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/store"
)

// ObservationRecaller is what a mental model refresh needs of
// recall.Recaller: the observations that answer its question, through the
// same four arms and scoring as the API's recall.
type ObservationRecaller interface {
	Recall(ctx context.Context, req recall.Request) (recall.Response, error)
}

// mentalModelPool is how many observations a refresh considers; the
// summary keeps those that fit the model's token budget.
const mentalModelPool = 20

// relevantFraction keeps observations whose similarity to the question is
// at least this fraction of the best one's.
const relevantFraction = 0.5

// closeFraction is the similarity, as a fraction of the best one's, at
// which an observation with little keyword evidence (below
// lexicalFraction of the best keyword score) still counts as answering the
// question. Below it, similarity alone is weak evidence: the offline
// embedder scores every "Alice: …" line of a chat close to a question
// about Alice, and the keyword arm matches them all on "Alice", at a
// fraction of the score of the lines that share the question's topic
// word.
const (
	closeFraction   = 0.9
	lexicalFraction = 0.5
)

// Refresh recomputes one mental model now, regardless of the minimum
// interval (the API's POST …/mental-models/{id}/refresh). It returns an
// error wrapping store.ErrNotFound when the bank has no such model.
func (w *Worker) Refresh(ctx context.Context, bankID, id string) error {
	uid, err := uuid.Parse(id)
	if err != nil {
		return fmt.Errorf("refresh mental model %s/%s: %w", bankID, id, store.ErrNotFound)
	}
	m, err := w.st.RefreshTargetByID(ctx, bankID, uid)
	if err != nil {
		return err
	}
	return w.refreshModel(ctx, m)
}

// refreshBankModels refreshes the bank's mental models; unless force, a
// model refreshed less than MentalModelMinInterval ago is left alone, so a
// bank that consolidates continuously does not rewrite its models after
// every batch.
func (w *Worker) refreshBankModels(ctx context.Context, bankID string, force bool) (int, error) {
	models, err := w.st.RefreshTargets(ctx, bankID)
	if err != nil {
		return 0, err
	}
	n := 0
	now := w.now()
	for _, m := range models {
		if !force && m.LastRefreshedAt != nil && now.Sub(*m.LastRefreshedAt) < w.cfg.MentalModelMinInterval {
			w.m.refreshes.WithLabelValues("too_soon").Inc()
			continue
		}
		if err := w.refreshModel(ctx, m); err != nil {
			w.m.refreshes.WithLabelValues("error").Inc()
			return n, err
		}
		n++
	}
	return n, nil
}

// basedOn is the mental model's based_on column, shaped like reflect's.
type basedOn struct {
	Memories     []string `json:"memories"`
	Observations []string `json:"observations"`
	MentalModels []string `json:"mental_models"`
	GeneratedBy  string   `json:"generated_by"`
	SourceQuery  string   `json:"source_query"`
}

func (w *Worker) refreshModel(ctx context.Context, m store.RefreshTarget) error {
	content, raw, used, err := w.candidate(ctx, m)
	if err != nil {
		return err
	}
	if err := w.st.WriteMentalModelRefresh(ctx, m.BankID, m.ID, content, raw, w.now()); err != nil {
		return err
	}
	w.m.refreshes.WithLabelValues("refreshed").Inc()
	w.log.Debug("mental model refreshed", slog.String("bank_id", m.BankID), slog.String("mental_model_id", m.ID.String()),
		slog.Int("observations", len(used)))
	return nil
}

// candidate is the content a refresh of m would write now, its based_on
// column, and the observations it rests on.
func (w *Worker) candidate(ctx context.Context, m store.RefreshTarget) (string, json.RawMessage, []store.RankedObservation, error) {
	vecs, err := w.emb.EmbedQueries(ctx, []string{m.SourceQuery})
	if err != nil {
		return "", nil, nil, fmt.Errorf("refresh mental model %s/%s: embed question: %w", m.BankID, m.ID, err)
	}
	obs, err := w.rankForModel(ctx, m, vecs[0])
	if err != nil {
		return "", nil, nil, fmt.Errorf("refresh mental model %s/%s: %w", m.BankID, m.ID, err)
	}
	content, used := Summarize(m.SourceQuery, obs, m.MaxTokens)
	b := basedOn{Memories: []string{}, Observations: []string{}, MentalModels: []string{}, GeneratedBy: "extractive", SourceQuery: m.SourceQuery}
	for _, o := range used {
		b.Observations = append(b.Observations, o.ID.String())
	}
	raw, err := json.Marshal(b)
	return content, raw, used, err
}

// DryRefresh returns what a refresh of the mental model would write now,
// and the ids of the observations it rests on, without writing anything.
func (w *Worker) DryRefresh(ctx context.Context, bankID, id string) (string, []string, error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return "", nil, fmt.Errorf("dry-run refresh mental model %s/%s: %w", bankID, id, store.ErrNotFound)
	}
	m, err := w.st.RefreshTargetByID(ctx, bankID, uid)
	if err != nil {
		return "", nil, err
	}
	content, _, used, err := w.candidate(ctx, m)
	ids := make([]string, len(used))
	for i, o := range used {
		ids[i] = o.ID.String()
	}
	return content, ids, err
}

// rankForModel ranks the bank's observations for a model's question:
// through recall when the worker has a Recaller (interleave fusion, so the
// semantic best match is never crowded out), else by similarity alone.
// A failing recall degrades to the similarity query rather than leaving
// the model stale.
func (w *Worker) rankForModel(ctx context.Context, m store.RefreshTarget, vec []float32) ([]store.RankedObservation, error) {
	if w.rec != nil {
		resp, err := w.rec.Recall(ctx, recall.Request{BankID: m.BankID, Query: m.SourceQuery, Types: []string{"observation"},
			Tags: m.Tags, TagsMatch: "any", Fusion: "interleave", MaxTokens: m.MaxTokens, QueryTime: w.now()})
		if err == nil {
			out := make([]store.RankedObservation, 0, len(resp.Results))
			for _, r := range resp.Results {
				// Recall's order is kept; its final score mixes recency
				// and proof, so relevance to the question is judged by the
				// semantic score alone.
				out = append(out, store.RankedObservation{ID: r.ID, Text: r.Text, ProofCount: r.ProofCount, Trend: r.Trend,
					Similarity: r.Scores.Semantic, Keyword: r.Scores.Keyword})
			}
			return out, nil
		}
		w.log.Warn("mental model recall failed; ranking by similarity", slog.String("bank_id", m.BankID), slog.Any("error", err))
	}
	return w.st.RankObservations(ctx, m.BankID, m.Tags, vec, mentalModelPool)
}

// Summarize is the offline content of a mental model: an extractive
// summary of the observations that answer its question, best first, each
// with its trend, its amount of evidence and a citation [obs:<id>] that
// the API and knowledge pages resolve. Observations that do not resemble
// the question at all (similarity <= 0), or much less than the best match
// (below half its similarity), are left out, and so, when the keyword arm
// scored some, are those with under half the best keyword score unless
// they are nearly as similar as the best (closeFraction);
// maxTokens (about four characters each) bounds the length. It returns the
// content and the observations it cites.
func Summarize(question string, obs []store.RankedObservation, maxTokens int) (string, []store.RankedObservation) {
	if maxTokens <= 0 {
		maxTokens = 2048
	}
	budget := maxTokens * 4
	var b strings.Builder
	b.WriteString(strings.TrimSpace(question))
	b.WriteString("\n\n")
	var used []store.RankedObservation
	seen := map[string]bool{}
	best, bestKeyword := 0.0, 0.0
	for _, o := range obs {
		best = max(best, o.Similarity)
		bestKeyword = max(bestKeyword, o.Keyword)
	}
	for _, o := range obs {
		// Far below the best match is another topic: a page about
		// preferences should not list where someone lives.
		if o.Similarity <= 0 || o.Similarity < relevantFraction*best || seen[o.Text] {
			continue
		}
		if bestKeyword > 0 && o.Keyword < lexicalFraction*bestKeyword && o.Similarity < closeFraction*best {
			continue
		}
		trend := o.Trend
		if trend == "" {
			trend = "UNKNOWN"
		}
		noun := "pieces"
		if o.ProofCount == 1 {
			noun = "piece"
		}
		line := fmt.Sprintf("- %s (%s, %d %s of evidence) [obs:%s]\n", strings.TrimSpace(o.Text), trend, o.ProofCount, noun, o.ID)
		if b.Len()+len(line) > budget && len(used) > 0 {
			break
		}
		seen[o.Text] = true
		b.WriteString(line)
		used = append(used, o)
	}
	if len(used) == 0 {
		b.WriteString("No observations answer this question yet.\n")
	}
	return b.String(), used
}
