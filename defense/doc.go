// Package defense is memstream's memory-defense gate: the first stage of
// the ingest pipeline and the check behind the HTTP retain endpoint.
//
// Memory is long-term. A token pasted into a chat once would otherwise be
// extracted, embedded and replayed into every future recall, so secrets and
// selected personal data are removed before anything is chunked or stored.
//
// The package has three layers:
//
//   - A pattern library (patterns.go): ordered, labelled detectors for
//     vendor API keys, cloud credentials, private keys, JWTs, credentials
//     in URLs, generic password/secret assignments and checksum-validated
//     PII (Luhn for cards, mod-97 for IBANs, SSA rules for SSNs). Email and
//     phone are opt-in.
//   - A Scanner (scanner.go): one Aho-Corasick pass over the text finds
//     every pattern keyword; a pattern is only tried where one of its
//     keywords occurs, anchored at the hit, and most token shapes skip the
//     regex engine through a matcher derived from their regex (simple.go).
//     A byte loop handles digit-based PII (digits.go). Clean text therefore
//     costs about one table lookup per byte. Token boundaries are checked
//     in code (Go's regexp has no lookaround), so a key glued to CJK text
//     matches exactly and "sk-" inside "task-1234" does not.
//
// Pipeline use: build one Gate at start-up (NewGate) and call Check per
// record before chunking; store Result.Text, persist the AuditRecords,
// and route a *BlockedError (errors.Is(err, ErrBlocked)) to the record's
// failure path. The HTTP retain handler calls the same Check and maps
// ErrBlocked to 422; the error text names labels only.
//   - A Policy (policy.go) stored per bank that maps labels and categories
//     to allow, redact or block, and a Gate (gate.go) that applies it,
//     counts findings in Prometheus and emits audit records carrying a
//     salted HMAC fingerprint instead of the value.
//
// Redaction replaces the secret span with "[REDACTED:<label>]". For
// context-anchored secrets (aws_secret_access_key = …, password: …) and for
// credentials in URLs only the value is replaced: the variable name, user
// and host stay, because they are useful memory and not secret.
//
// Nothing in this package logs, returns in an error, or records a raw
// finding value.
package defense
