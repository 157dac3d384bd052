package recallapi

import (
	"crypto/rand"
	"encoding/hex"
)

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var validTypes = map[string]bool{"world": true, "experience": true, "observation": true}
var validTagsMatch = map[string]bool{"any": true, "all": true, "any_strict": true, "all_strict": true, "exact": true}
var validArms = map[string]bool{"semantic": true, "keyword": true, "graph": true, "temporal": true}

// budgetAndTokens validates the budget, max_tokens and tags fields shared by
// recall and reflect, filling budget (default mid) and maxTokens when given.
func budgetAndTokens(budgetIn string, maxIn *int, tags []string, budget *string, maxTokens *int) error {
	switch budgetIn {
	case "":
		*budget = "mid"
	case "low", "mid", "high":
	default:
		return badRequest("budget", "budget must be low, mid or high")
	}
	if maxIn != nil {
		if *maxIn <= 0 || *maxIn > 1_000_000 {
			return badRequest("max_tokens", "max_tokens must be between 1 and 1000000")
		}
		*maxTokens = *maxIn
	}
	return validateTags("tags", tags)
}
