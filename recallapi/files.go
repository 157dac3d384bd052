package recallapi

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// fileMeta is one entry of Hindsight's files_metadata.
type fileMeta struct {
	Context    string            `json:"context"`
	DocumentID string            `json:"document_id"`
	Tags       tagList           `json:"tags"`
	Metadata   map[string]string `json:"metadata"`
	Timestamp  string            `json:"timestamp"`
}

func attachmentKey(bank, id string) string { return "att/" + bank + "/" + id }

func attachmentView(bank string, f store.StoredFile) map[string]any {
	id := strings.TrimPrefix(f.Key, "att/"+bank+"/")
	return map[string]any{"id": id, "hash": f.SHA256, "kind": "file", "media_type": f.MediaType, "byte_size": f.Size,
		"filename": f.Filename, "url": "/v1/default/banks/" + bank + "/attachments/" + id}
}

// fileRetain serves Hindsight's multipart file upload. memstream has no
// document converter (PDF, DOCX, OCR), so it takes text files (UTF-8):
// each is kept as the document's attachment and retained as one async
// item; one operation per file.
func (s *Server) fileRetain(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	if err := r.ParseMultipartForm(min(s.cfg.MaxBodyBytes, 32<<20)); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large", Message: fmt.Sprintf("upload exceeds http.max_body_bytes (%d bytes)", s.cfg.MaxBodyBytes)}
		}
		return badRequest("files", "the body must be multipart/form-data with files and request parts: "+err.Error())
	}
	defer r.MultipartForm.RemoveAll()
	files := r.MultipartForm.File["files"]
	if len(files) == 0 {
		return badRequest("files", "files must hold at least one file")
	}
	var req struct {
		FilesMetadata []fileMeta `json:"files_metadata"`
	}
	if raw := r.FormValue("request"); raw != "" {
		if err := decodeJSON([]byte(raw), &req); err != nil {
			return badRequest("request", "request must be a JSON object {files_metadata: [...]}")
		}
	}
	if req.FilesMetadata != nil && len(req.FilesMetadata) != len(files) {
		return badRequest("request.files_metadata", "files_metadata must have one entry per file")
	}
	type upload struct {
		name, media string
		data        []byte
		meta        fileMeta
	}
	var ups []upload
	for i, fh := range files {
		field := fmt.Sprintf("files[%d]", i)
		f, err := fh.Open()
		if err != nil {
			return badRequest(field, field+": "+err.Error())
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return badRequest(field, field+": "+err.Error())
		}
		media := fh.Header.Get("Content-Type")
		if mt, _, err := mime.ParseMediaType(media); err == nil {
			media = mt
		}
		if media == "" || media == "application/octet-stream" {
			media = mime.TypeByExtension(filepath.Ext(fh.Filename))
			if media == "" {
				media = "text/plain"
			}
		}
		if !utf8.Valid(data) || strings.IndexByte(string(data), 0) >= 0 || !(strings.HasPrefix(media, "text/") ||
			media == "application/json" || strings.HasSuffix(media, "+json") || strings.HasSuffix(media, "+xml")) {
			return &apiError{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Field: field,
				Message: field + " (" + fh.Filename + ", " + media + "): only UTF-8 text files are retained; memstream has no PDF, office or image converter"}
		}
		u := upload{name: fh.Filename, media: media, data: data}
		if req.FilesMetadata != nil {
			u.meta = req.FilesMetadata[i]
		}
		ups = append(ups, u)
	}
	ids := []string{}
	for i, u := range ups {
		doc := u.meta.DocumentID
		if doc == "" {
			doc = "file-" + uuid.NewString()
		}
		// The key is derived from the bytes, as Hindsight's attachment ids
		// are, so a re-upload is one file.
		if _, err := s.d.Store.PutFile(r.Context(), store.StoredFile{Key: attachmentKey(bank, shaPrefix(u.data)), BankID: bank, Kind: "attachment",
			DocumentID: doc, Filename: u.name, MediaType: u.media, Data: u.data}); err != nil {
			return err
		}
		body := RetainRequest{Async: true, Items: []retainItem{{Content: contentValue{Text: string(u.data)}, DocumentID: doc,
			Context: u.meta.Context, Tags: u.meta.Tags, Metadata: u.meta.Metadata, Timestamp: u.meta.Timestamp}}}
		_, out, _, err := s.Retain(r.Context(), bank, body, "")
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) && ae.Field != "" {
				ae.Field = fmt.Sprintf("files[%d]", i)
			}
			return err
		}
		ids = append(ids, out.OperationID)
	}
	writeJSON(w, http.StatusOK, map[string]any{"operation_ids": ids})
	return nil
}

func (s *Server) getAttachment(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	f, err := s.d.Store.GetFile(r.Context(), attachmentKey(bank, r.PathValue("attachment_id")))
	if err != nil {
		return err
	}
	return serveFile(w, f)
}

// downloadFile serves a file an operation produced. The path names no
// bank: the file's bank is checked against the key, and a file of a bank
// the key may not read is not found.
func (s *Server) downloadFile(w http.ResponseWriter, r *http.Request) error {
	f, err := s.d.Store.GetFile(r.Context(), "arc/"+r.PathValue("key"))
	if err != nil {
		return err
	}
	if !keyMayRead(r, f.BankID) {
		return notFound("File not found")
	}
	return serveFile(w, f)
}

func serveFile(w http.ResponseWriter, f store.StoredFile) error {
	w.Header().Set("Content-Type", f.MediaType)
	if f.Filename != "" {
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.Filename}))
	}
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(f.Data)
	return err
}

// shaPrefix is the short id of some bytes: a prefix of their SHA-256.
func shaPrefix(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
