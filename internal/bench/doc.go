// Package bench holds memstream's benchmarks (`memstream bench ingest`,
// `recall`, `reflect`, `defense`) and the fakes and synthetic data they
// need. Each benchmark measures a speed together with a baseline run in
// the same process on the same data (SPEC §7), and prints one JSON line.
//
// The benchmarks live here rather than in the packages they measure so that
// library packages export only what production code uses, and main only
// parses flags and calls them.
package bench
