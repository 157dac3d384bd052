// Package reflect answers questions over a bank's memory with an agent
// loop: mental models first, then observations, then raw facts, shaped by
// the bank's disposition, bounded by iterations, tokens and time, and always
// ending in an answer with what it was based on.
package reflect
