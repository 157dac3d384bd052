package recallapi

import (
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// knowledgeNodeView is Hindsight's KnowledgeNode.
type knowledgeNodeView struct {
	ID            string               `json:"id"`
	Kind          string               `json:"kind"`
	Name          string               `json:"name"`
	ParentID      *string              `json:"parent_id"`
	MentalModelID *string              `json:"mental_model_id"`
	Managed       bool                 `json:"managed"`
	Description   *string              `json:"description"`
	Tags          []string             `json:"tags"`
	Timestamp     *string              `json:"timestamp"`
	IsStale       bool                 `json:"is_stale"`
	Children      []*knowledgeNodeView `json:"children"`
}

func (s *Server) knowledgeViews(r *http.Request, bank string) ([]*knowledgeNodeView, map[string]*knowledgeNodeView, map[string]store.MentalModel, error) {
	nodes, err := s.d.Store.ListKnowledgeNodes(r.Context(), bank)
	if err != nil {
		return nil, nil, nil, err
	}
	models, err := s.d.Store.ListMentalModels(r.Context(), bank)
	if err != nil {
		return nil, nil, nil, err
	}
	byModel := map[string]store.MentalModel{}
	for _, m := range models {
		byModel[m.ID.String()] = m
	}
	views := map[string]*knowledgeNodeView{}
	for _, n := range nodes {
		views[n.ID.String()] = viewNode(n, byModel)
	}
	var roots []*knowledgeNodeView
	for _, n := range nodes {
		v := views[n.ID.String()]
		if n.ParentID != nil {
			if p, ok := views[n.ParentID.String()]; ok {
				p.Children = append(p.Children, v)
				continue
			}
		}
		roots = append(roots, v)
	}
	return nonNil(roots), views, byModel, nil
}

func viewNode(n store.KnowledgeNode, models map[string]store.MentalModel) *knowledgeNodeView {
	v := &knowledgeNodeView{ID: n.ID.String(), Kind: n.Kind, Name: n.Name, Tags: []string{}, Children: []*knowledgeNodeView{}}
	if n.ParentID != nil {
		p := n.ParentID.String()
		v.ParentID = &p
	}
	if n.MentalModelID != nil {
		id := n.MentalModelID.String()
		v.MentalModelID = &id
		if m, ok := models[id]; ok {
			v.Tags = nonNil(m.Tags)
			v.Description = &m.SourceQuery
			if m.LastRefreshedAt != nil {
				ts := m.LastRefreshedAt.UTC().Format("2006-01-02T15:04:05Z")
				v.Timestamp = &ts
			}
		}
	}
	return v
}

func (s *Server) knowledgeTree(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	roots, _, _, err := s.knowledgeViews(r, bank)
	if err != nil {
		return err
	}
	if tags := queryList(r, "tags"); len(tags) > 0 {
		mode := r.URL.Query().Get("tags_match")
		if mode == "" {
			mode = "any"
		}
		roots = filterTree(roots, tags, mode)
	}
	writeJSON(w, http.StatusOK, map[string]any{"roots": roots})
	return nil
}

// filterTree keeps the pages whose tags match, and the folders on the way
// to them.
func filterTree(nodes []*knowledgeNodeView, tags []string, mode string) []*knowledgeNodeView {
	out := []*knowledgeNodeView{}
	for _, n := range nodes {
		if n.Kind == "page" {
			if tagsMatch(n.Tags, tags, mode) {
				out = append(out, n)
			}
			continue
		}
		n.Children = filterTree(n.Children, tags, mode)
		if len(n.Children) > 0 {
			out = append(out, n)
		}
	}
	return out
}

type folderBody struct {
	Name     string  `json:"name"`
	ParentID *string `json:"parent_id"`
}

func parentArg(p *string) (*uuid.UUID, error) {
	if p == nil || *p == "" {
		return nil, nil
	}
	id, err := uuid.Parse(*p)
	if err != nil {
		return nil, badRequest("parent_id", "parent_id must be a UUID")
	}
	return &id, nil
}

func knowledgeErr(err error) error {
	if errors.Is(err, store.ErrConflict) {
		return &apiError{Status: http.StatusConflict, Code: "conflict", Field: "parent_id", Message: "the parent must be a folder (and not the node itself or inside it)"}
	}
	return err
}

func (s *Server) createKnowledgeFolder(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body folderBody
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if n := strings.TrimSpace(body.Name); n == "" || len(n) > maxModelName {
		return badRequest("name", "name is required and at most 200 bytes")
	}
	parent, err := parentArg(body.ParentID)
	if err != nil {
		return err
	}
	if err := s.d.Store.EnsureBank(r.Context(), bank); err != nil {
		return err
	}
	n, err := s.d.Store.CreateKnowledgeNode(r.Context(), store.KnowledgeNode{ID: uuid.New(), BankID: bank, Kind: "folder", Name: strings.TrimSpace(body.Name), ParentID: parent})
	if err != nil {
		return knowledgeErr(err)
	}
	writeJSON(w, http.StatusCreated, viewNode(n, nil))
	return nil
}

type pageBody struct {
	Name        string   `json:"name"`
	SourceQuery string   `json:"source_query"`
	ParentID    *string  `json:"parent_id"`
	Tags        []string `json:"tags"`
	MaxTokens   *int     `json:"max_tokens"`
}

// createKnowledgePage creates the page's mental model (whose first content
// an operation generates) and places it in the tree.
func (s *Server) createKnowledgePage(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body pageBody
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	parent, err := parentArg(body.ParentID)
	if err != nil {
		return err
	}
	if parent != nil {
		if _, err := s.d.Store.GetKnowledgeNode(r.Context(), bank, *parent); err != nil {
			return err
		}
	}
	m, op, err := s.CreateMentalModel(r.Context(), bank, mentalModelCreate{Name: body.Name, SourceQuery: body.SourceQuery, Tags: body.Tags, MaxTokens: body.MaxTokens})
	if err != nil {
		return err
	}
	n, err := s.d.Store.CreateKnowledgeNode(r.Context(), store.KnowledgeNode{ID: uuid.New(), BankID: bank, Kind: "page", Name: m.Name, ParentID: parent, MentalModelID: &m.ID})
	if err != nil {
		return knowledgeErr(err)
	}
	writeJSON(w, http.StatusCreated, map[string]any{"page_id": n.ID.String(), "mental_model_id": m.ID.String(), "operation_id": op})
	return nil
}

func pageMarkdown(name, content string) string {
	return "# " + name + "\n\n" + strings.TrimSpace(content) + "\n"
}

func (s *Server) page(r *http.Request, name string) (string, store.KnowledgeNode, store.MentalModel, error) {
	bank, id, err := s.bankAndUUID(r, name)
	if err != nil {
		return "", store.KnowledgeNode{}, store.MentalModel{}, err
	}
	n, err := s.d.Store.GetKnowledgeNode(r.Context(), bank, id)
	if err != nil {
		return bank, n, store.MentalModel{}, err
	}
	if n.Kind != "page" || n.MentalModelID == nil {
		return bank, n, store.MentalModel{}, notFound("Knowledge page '" + id.String() + "' not found")
	}
	m, err := s.d.Store.GetMentalModel(r.Context(), bank, *n.MentalModelID)
	return bank, n, m, err
}

func (s *Server) getKnowledgePage(w http.ResponseWriter, r *http.Request) error {
	_, n, m, err := s.page(r, "page_id")
	if err != nil {
		return err
	}
	var ts *string
	if m.LastRefreshedAt != nil {
		t := m.LastRefreshedAt.UTC().Format("2006-01-02T15:04:05Z")
		ts = &t
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": n.ID.String(), "name": n.Name, "type": "page", "description": m.SourceQuery,
		"tags": nonNil(m.Tags), "timestamp": ts, "body": m.Content, "markdown": pageMarkdown(n.Name, m.Content), "mental_model_id": m.ID.String()})
	return nil
}

// searchKnowledgeBase finds pages whose name or content holds every word
// of q, ranked by how often they occur.
func (s *Server) searchKnowledgeBase(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	q, err := textParam(r, "q")
	if err != nil {
		return err
	}
	limit, err := intParam(r, "limit", 20, 1, 100)
	if err != nil {
		return err
	}
	_, views, models, err := s.knowledgeViews(r, bank)
	if err != nil {
		return err
	}
	words := strings.Fields(strings.ToLower(q))
	type hit struct {
		v     *knowledgeNodeView
		m     store.MentalModel
		score float64
	}
	var hits []hit
	for _, v := range views {
		if v.Kind != "page" || v.MentalModelID == nil {
			continue
		}
		m := models[*v.MentalModelID]
		text := strings.ToLower(v.Name + "\n" + m.Content)
		score := 0.0
		for _, wd := range words {
			c := strings.Count(text, wd)
			if c == 0 {
				score = 0
				break
			}
			score += float64(c)
		}
		if score > 0 || len(words) == 0 {
			hits = append(hits, hit{v, m, score})
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		return hits[i].score > hits[j].score || hits[i].score == hits[j].score && hits[i].v.Name < hits[j].v.Name
	})
	total := len(hits)
	results := []any{}
	for _, h := range hits[:min(len(hits), limit)] {
		snippet := h.m.Content
		if len(words) > 0 {
			if i := strings.Index(strings.ToLower(snippet), words[0]); i >= 0 {
				snippet = snippet[max(0, i-60):]
			}
		}
		snippet, _ = cutTokens(snippet, 50)
		results = append(results, map[string]any{"id": h.v.ID, "name": h.v.Name, "mental_model_id": h.v.MentalModelID,
			"source_query": h.m.SourceQuery, "snippet": snippet, "score": h.score, "updated_at": h.m.UpdatedAt})
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": results, "total": total})
	return nil
}

// exportKnowledgeBase returns every page as a markdown file, at its path
// in the tree.
func (s *Server) exportKnowledgeBase(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	roots, _, models, err := s.knowledgeViews(r, bank)
	if err != nil {
		return err
	}
	files := []any{}
	var walk func(prefix string, ns []*knowledgeNodeView)
	walk = func(prefix string, ns []*knowledgeNodeView) {
		for _, n := range ns {
			name := strings.NewReplacer("/", "-", "\\", "-").Replace(n.Name)
			if n.Kind == "folder" {
				walk(prefix+name+"/", n.Children)
				continue
			}
			content := ""
			if n.MentalModelID != nil {
				content = models[*n.MentalModelID].Content
			}
			files = append(files, map[string]any{"path": prefix + name + ".md", "content": pageMarkdown(n.Name, content)})
		}
	}
	walk("", roots)
	writeJSON(w, http.StatusOK, map[string]any{"files": files})
	return nil
}

type nodeUpdate struct {
	Name        *string           `json:"name"`
	ParentID    optional[*string] `json:"parent_id"`
	SourceQuery *string           `json:"source_query"`
	Tags        *[]string         `json:"tags"`
	MaxTokens   *int              `json:"max_tokens"`
}

func (s *Server) updateKnowledgeNode(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "node_id")
	if err != nil {
		return err
	}
	var body nodeUpdate
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if body.Name != nil {
		if n := strings.TrimSpace(*body.Name); n == "" || len(n) > maxModelName {
			return badRequest("name", "name must be 1 to 200 bytes")
		}
	}
	var parent *uuid.UUID
	if body.ParentID.Set && !body.ParentID.Null {
		if parent, err = parentArg(body.ParentID.V); err != nil {
			return err
		}
	}
	n, err := s.d.Store.MoveKnowledgeNode(r.Context(), bank, id, trimPtr(body.Name), body.ParentID.Set, parent)
	if err != nil {
		return knowledgeErr(err)
	}
	if n.MentalModelID != nil && (body.Name != nil || body.SourceQuery != nil || body.Tags != nil || body.MaxTokens != nil) {
		if err := validateModelFields(body.Name, body.SourceQuery, nil, body.Tags, body.MaxTokens); err != nil {
			return err
		}
		if _, err := s.d.Store.UpdateMentalModel(r.Context(), bank, *n.MentalModelID, store.MentalModelPatch{Name: trimPtr(body.Name),
			SourceQuery: trimPtr(body.SourceQuery), Tags: body.Tags, MaxTokens: body.MaxTokens}); err != nil {
			return err
		}
		s.models.invalidate(bank, n.MentalModelID.String(), "local")
	}
	_, views, _, err := s.knowledgeViews(r, bank)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, views[n.ID.String()])
	return nil
}

func (s *Server) deleteKnowledgeNode(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "node_id")
	if err != nil {
		return err
	}
	models, err := s.d.Store.DeleteKnowledgeNode(r.Context(), bank, id)
	if err != nil {
		return err
	}
	for _, m := range models {
		s.models.invalidate(bank, m.String(), "local")
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "knowledge node deleted", "deleted_count": 1 + len(models)})
	return nil
}
