package eval

import (
	"slices"
	"strings"
	"testing"
)

func TestParseJointOff(t *testing.T) {
	got, err := ParseJointOff("query_form+change, dedupe+recency+present")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"query_form", "change"}, {"dedupe", "recency", "present"}}
	if len(got) != len(want) || !slices.Equal(got[0], want[0]) || !slices.Equal(got[1], want[1]) {
		t.Fatalf("got %v, want %v", got, want)
	}
	vs := JointVariants(got)
	if len(vs) != 2 || vs[0].Name != "heuristics off: query_form+change" || !slices.Equal(vs[1].Off, want[1]) {
		t.Errorf("variants %+v", vs)
	}
	if got, err := ParseJointOff(""); err != nil || len(got) != 0 {
		t.Errorf("empty: %v, %v", got, err)
	}
	for _, bad := range []string{"query_form", "query_form+nope"} {
		if _, err := ParseJointOff(bad); err == nil || !strings.Contains(err.Error(), bad[strings.LastIndex(bad, "+")+1:]) {
			t.Errorf("%q: error %v, want one naming it", bad, err)
		}
	}
}
