package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// StoredFile is an uploaded file (a retained attachment) or an archive an
// operation produced.
type StoredFile struct {
	Key        string    `json:"key"`
	BankID     string    `json:"bank_id"`
	Kind       string    `json:"kind"`
	DocumentID string    `json:"document_id,omitempty"`
	Filename   string    `json:"filename,omitempty"`
	MediaType  string    `json:"media_type"`
	SHA256     string    `json:"sha256"`
	Size       int       `json:"byte_size"`
	Data       []byte    `json:"-"`
	CreatedAt  time.Time `json:"created_at"`
}

const (
	qFilePut = `INSERT INTO files (key, bank_id, kind, document_id, filename, media_type, sha256, data)
		VALUES ($1, $2, $3, NULLIF($4, ''), NULLIF($5, ''), $6, $7, $8)
		ON CONFLICT (key) DO NOTHING`
	qFileGet      = `SELECT key, bank_id, kind, COALESCE(document_id, ''), COALESCE(filename, ''), media_type, sha256, length(data), data, created_at FROM files WHERE key = $1`
	qDocumentFile = `SELECT key, bank_id, kind, COALESCE(document_id, ''), COALESCE(filename, ''), media_type, sha256, length(data), ''::bytea, created_at
		FROM files WHERE bank_id = $1 AND document_id = $2 AND kind = 'attachment' ORDER BY created_at, key`
)

// PutFile stores a file under f.Key (a key already used keeps its file).
func (s *Store) PutFile(ctx context.Context, f StoredFile) (StoredFile, error) {
	sum := sha256.Sum256(f.Data)
	f.SHA256, f.Size = hex.EncodeToString(sum[:]), len(f.Data)
	if _, err := s.pool.Exec(ctx, qFilePut, f.Key, f.BankID, f.Kind, f.DocumentID, f.Filename, f.MediaType, f.SHA256, f.Data); err != nil {
		return f, fmt.Errorf("put file %s bank %s: %w", f.Key, f.BankID, err)
	}
	return f, nil
}

// GetFile returns a file with its bytes, or ErrNotFound; the caller
// checks its bank.
func (s *Store) GetFile(ctx context.Context, key string) (StoredFile, error) {
	var f StoredFile
	err := s.pool.QueryRow(ctx, qFileGet, key).Scan(&f.Key, &f.BankID, &f.Kind, &f.DocumentID, &f.Filename, &f.MediaType, &f.SHA256, &f.Size, &f.Data, &f.CreatedAt)
	if err != nil {
		return f, fmt.Errorf("get file %s: %w", key, translate(err))
	}
	return f, nil
}

// DocumentFiles lists the attachments retained with a document, without
// their bytes.
func (s *Store) DocumentFiles(ctx context.Context, bankID, docID string) ([]StoredFile, error) {
	rows, err := s.pool.Query(ctx, qDocumentFile, bankID, docID)
	if err != nil {
		return nil, fmt.Errorf("document files %s/%s: %w", bankID, docID, err)
	}
	defer rows.Close()
	var out []StoredFile
	for rows.Next() {
		var f StoredFile
		if err := rows.Scan(&f.Key, &f.BankID, &f.Kind, &f.DocumentID, &f.Filename, &f.MediaType, &f.SHA256, &f.Size, &f.Data, &f.CreatedAt); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}
