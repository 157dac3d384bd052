// Package text prepares text for PostgreSQL full-text search in a way
// that works for Chinese as well as English: PostgreSQL's parsers see a run
// of Han characters as one word, so both the stored side (search_aux) and
// the query side break CJK runs into overlapping bigrams, and add entity
// names and aliases so that a query using one alias finds facts written
// with another. It also holds the stopwords that keyword queries drop.
package text
