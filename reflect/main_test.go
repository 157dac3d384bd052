package reflect

import (
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/memstream/memstream/tokens"
)

// The offline provider runs its searches on goroutines and the agent
// loop's calls carry deadlines; none may outlive a Reflect call.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testTokens is the counter the fakes and assertions count with: the one
// a Reflector builds when Deps.Tokens is nil.
var testTokens = sync.OnceValue(func() *tokens.Counter {
	c, err := tokens.New(tokens.Config{})
	if err != nil {
		panic(err)
	}
	return c
})
