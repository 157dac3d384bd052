package defense

import (
	"math/rand/v2"

	"github.com/memstream/memstream/internal/bench/samples"
)

// corpus is samples.Corpus planting the default-on labels.
func corpus(r *rand.Rand, size int, dense bool) (string, []samples.Planted) {
	var labels []string
	for _, p := range compiledPatterns() {
		if !p.OptIn {
			labels = append(labels, p.Label)
		}
	}
	return samples.Corpus(r, size, dense, labels)
}
