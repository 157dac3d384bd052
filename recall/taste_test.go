package recall

import (
	"testing"

	"github.com/google/uuid"
)

func TestTasteStatement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"Ana: I always take the window seat.", true},
		{"We'd much rather cook at home.", true},
		{"I'm lactose intolerant.", true},
		{"I've been teetotal since 2019.", true},
		{"I can't stand horror films.", true},
		{"I really love sea swimming.", true},
		{"My favourite band is playing tonight.", true},
		{"我从不喝咖啡", true},
		{"I'm thinking of going out tonight.", false},
		{"I'm at the station.", false},
		{"I went to the dentist.", false},
		{"She always takes the bus.", false},
		{"我昨天去了北京", false},
	} {
		if got := tasteStatement(tc.s); got != tc.want {
			t.Errorf("tasteStatement(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestNameQuestion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q    string
		want bool
	}{
		{"Who do I work for now?", true},
		{"Where is my office these days?", true},
		{"Which gym do I go to now?", true},
		{"她现在住在哪里？", true},
		{"What do I do on weekends now?", false},
		{"How long is my commute now?", false},
	} {
		if got := nameQuestion(tc.q); got != tc.want {
			t.Errorf("nameQuestion(%q) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

// A selected result deep in the fused list rises above unselected results
// that only one arm ranked higher; non-RRF fusion is left alone; a
// statement whose only entity is its speaker is not a naming one.
func TestListFuseLiftsSelected(t *testing.T) {
	t.Parallel()
	id := func(n byte) uuid.UUID { return uuid.UUID{n} }
	var sem ArmTrace
	sem.Arm = ArmSemantic
	for i := byte(1); i <= 20; i++ {
		sem.Candidates = append(sem.Candidates, Candidate{ID: id(i), Score: 1 - float64(i)/100})
	}
	traces := []ArmTrace{sem}
	fs := fuse(FusionRRF, traces, 60, nil)
	hs := make([]hydrated, 20)
	for i := range hs {
		hs[i].ID, hs[i].Type, hs[i].Text = id(byte(i+1)), "experience", "Ana: I went out."
		hs[i].ents = []EntityRef{{Name: "Ana"}}
	}
	hs[17].Text = "Ana: I never eat meat."
	hs[18].ents = append(hs[18].ents, EntityRef{Name: "Kerrisdale"})
	q := &query{Request: Request{Fusion: FusionRRF}}
	got := listFuse(q, traces, hs, fs, 60, nil, tasteResult)
	if got[0].ID != id(18) {
		t.Errorf("taste: first = %v, want the taste statement 18", got[0].ID[0])
	}
	got = listFuse(q, traces, hs, fs, 60, nil, namingResult)
	if got[0].ID != id(19) {
		t.Errorf("named: first = %v, want the naming statement 19", got[0].ID[0])
	}
	if namingResult(&hs[0]) {
		t.Error("a statement naming only its speaker counts as naming")
	}
	q.Fusion = FusionInterleave
	if got := listFuse(q, traces, hs, fs, 60, nil, tasteResult); got[0].ID != id(1) {
		t.Errorf("interleave fusion changed: first = %v", got[0].ID[0])
	}
}
