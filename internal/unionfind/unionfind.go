// Package unionfind holds disjoint sets over 0..n-1, for the two places
// that group items by transitive links: entity aliases within a message
// (resolve) and the independent chains of a consolidation batch
// (consolidate).
package unionfind

// Sets is a disjoint-set forest. The root of each set is its smallest
// member, so a set's representative does not depend on the order of the
// unions that built it.
type Sets []int

// New returns n singleton sets.
func New(n int) Sets {
	s := make(Sets, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// Find returns the root of i's set (its smallest member), halving the
// path on the way.
func (s Sets) Find(i int) int {
	for s[i] != i {
		s[i] = s[s[i]]
		i = s[i]
	}
	return i
}

// Union joins the sets of a and b.
func (s Sets) Union(a, b int) {
	ra, rb := s.Find(a), s.Find(b)
	if ra != rb {
		s[max(ra, rb)] = min(ra, rb)
	}
}
