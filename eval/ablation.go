package eval

// Variant is one recall configuration of an ablation: the request fields
// that differ from the baseline. Empty fields mean the server's defaults.
type Variant struct {
	// Name labels the row of the ablation table.
	Name string
	// Arms, Fusion and Types go into the recall request as they are.
	Arms   []string
	Fusion string
	Types  []string
}

// RecallArms are the retrieval arms of memstream's recall, in the order
// the ablation table lists them.
var RecallArms = []string{"semantic", "keyword", "graph", "temporal"}

// AblationVariants lists the configurations the ablation compares with
// the baseline run (all arms, RRF, every fact type), which is not in the
// list because the caller has already measured it: each arm alone, the
// other fusion method, and recall without consolidated observations. Reranking is
// absent because memstream's recall has no reranker yet; the report says so
// rather than printing a row that would only repeat the baseline.
func AblationVariants() []Variant {
	var vs []Variant
	for _, a := range RecallArms {
		vs = append(vs, Variant{Name: a + " only", Arms: []string{a}})
	}
	vs = append(vs,
		Variant{Name: "all arms, interleave", Fusion: "interleave"},
		// Without observations: world and experience facts only.
		Variant{Name: "no observations", Types: []string{"world", "experience"}},
	)
	return vs
}
