package store

import "github.com/jackc/pgx/v5"

// countedRows collects the rows of a paged list query whose every row ends
// with the window count of the whole match (count(*) OVER ()), so one query
// gives the page and the total. scan reads one row and stores the count in
// its extra argument. It closes rows.
func countedRows[T any](rows pgx.Rows, scan func(r scanner, extra ...any) (T, error)) ([]T, int, error) {
	defer rows.Close()
	out := []T{}
	total := 0
	for rows.Next() {
		var n int64
		v, err := scan(rows, &n)
		if err != nil {
			return nil, 0, err
		}
		total = int(n)
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}
