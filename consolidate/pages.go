package consolidate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/memstream/memstream/store"
)

// PageSource lists a bank's mental models.
type PageSource interface {
	RefreshTargets(ctx context.Context, bankID string) ([]store.RefreshTarget, error)
}

// WritePages writes each mental model of a bank as a markdown knowledge
// page, DIR/<bank>/<slug>.md, with YAML front matter (question,
// refreshed_at, sources) and the model's content as body, so that
// `cat DIR/alice/preferences.md` shows what memory knows about Alice's
// preferences. It returns the paths written.
func WritePages(ctx context.Context, src PageSource, bankID, dir string) ([]string, error) {
	models, err := src.RefreshTargets(ctx, bankID)
	if err != nil {
		return nil, err
	}
	bankDir := filepath.Join(dir, slug(bankID))
	if err := os.MkdirAll(bankDir, 0o755); err != nil {
		return nil, fmt.Errorf("export pages bank %s: %w", bankID, err)
	}
	var out []string
	used := map[string]int{}
	for _, m := range models {
		name := slug(m.Name)
		if used[name]++; used[name] > 1 {
			name += "-" + strconv.Itoa(used[name])
		}
		path := filepath.Join(bankDir, name+".md")
		if err := os.WriteFile(path, []byte(RenderPage(m)), 0o644); err != nil {
			return out, fmt.Errorf("export page %s: %w", path, err)
		}
		out = append(out, path)
	}
	return out, nil
}

// RenderPage renders one mental model as markdown with front matter.
// Strings are written as JSON strings, which are valid YAML scalars, so
// no question can break the front matter.
func RenderPage(m store.RefreshTarget) string {
	var b strings.Builder
	q, _ := json.Marshal(m.SourceQuery)
	name, _ := json.Marshal(m.Name)
	b.WriteString("---\n")
	fmt.Fprintf(&b, "title: %s\n", name)
	fmt.Fprintf(&b, "question: %s\n", q)
	if m.LastRefreshedAt != nil {
		fmt.Fprintf(&b, "refreshed_at: %s\n", m.LastRefreshedAt.UTC().Format(time.RFC3339))
	} else {
		b.WriteString("refreshed_at: null\n")
	}
	var based struct {
		Observations []string `json:"observations"`
		Memories     []string `json:"memories"`
	}
	_ = json.Unmarshal(m.BasedOn, &based)
	if len(based.Observations)+len(based.Memories) == 0 {
		b.WriteString("sources: []\n")
	} else {
		b.WriteString("sources:\n")
		for _, id := range based.Observations {
			fmt.Fprintf(&b, "  - obs:%s\n", id)
		}
		for _, id := range based.Memories {
			fmt.Fprintf(&b, "  - mem:%s\n", id)
		}
	}
	b.WriteString("---\n\n")
	content := strings.TrimSpace(m.Content)
	if content == "" {
		content = "_Not refreshed yet._"
	}
	b.WriteString(content)
	b.WriteString("\n")
	return b.String()
}

var nonSlug = regexp.MustCompile(`[^\p{L}\p{N}]+`)

// slug makes a file name from a mental model name: lower case, letters and
// digits (any script) joined by dashes.
func slug(name string) string {
	s := strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if s == "" {
		return "untitled"
	}
	return s
}
