// Package rescan applies a bank's current defense policy to what is already
// stored (`memstream defense rescan`). The ingest gate only sees new
// events; when an operator tightens a policy, or the pattern library
// learns a new key format, facts, chunks, evidence, mental models and
// documents stored earlier still hold what the new policy would remove.
//
// The rescan decides what each stored text becomes (the defense gate's
// redaction, a blocked fact's invalidation, new embeddings and search_aux);
// package store streams the rows and writes each batch in one
// transaction that skips rows changed meanwhile.
package rescan
