// Package tokens counts what a text costs in an agent's context window. It
// is the one counter behind recall's max_tokens budget and reflect's
// context budget, so that a budget means the same thing in both and a
// recall result that fits recall's budget also fits the reflect tool that
// asked for it.
package tokens
