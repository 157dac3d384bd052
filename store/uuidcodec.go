package store

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// registerUUID teaches a connection's type map google/uuid's UUID, which
// every table here keys by. Without it pgx encodes a uuid.UUID through its
// driver.Valuer: a string per value, which pgx parses back after failing a
// binary plan and formatting an error for it, and it scans one through
// sql.Scanner, formatting and parsing the text again. Recall sends arrays
// of ids with nearly every statement; that path was a tenth of the Go
// side's CPU in a recall profile.
func registerUUID(m *pgtype.Map) {
	t := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}}
	m.RegisterType(t)
	// The array type holds its element type: register it again so that
	// uuid[] parameters and columns use the codec above.
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: t}})
}

// uuidCodec is pgx's UUID codec with binary plans for uuid.UUID; every
// other Go type goes to the embedded codec as before.
type uuidCodec struct{ pgtype.UUIDCodec }

// PlanEncode encodes a uuid.UUID as its 16 bytes.
func (c uuidCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return encodeUUIDPlan{}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

// PlanScan copies the 16 bytes into a *uuid.UUID.
func (c uuidCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return scanUUIDPlan{}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

type encodeUUIDPlan struct{}

func (encodeUUIDPlan) Encode(value any, buf []byte) ([]byte, error) {
	u := value.(uuid.UUID)
	return append(buf, u[:]...), nil
}

type scanUUIDPlan struct{}

// Scan leaves the zero UUID for NULL, as uuid.UUID's own sql.Scanner does,
// so that replacing the scan path changes no caller's result.
func (scanUUIDPlan) Scan(src []byte, dst any) error {
	u := dst.(*uuid.UUID)
	if src == nil {
		*u = uuid.UUID{}
		return nil
	}
	if len(src) != 16 {
		return fmt.Errorf("scan uuid: %d bytes, want 16", len(src))
	}
	copy(u[:], src)
	return nil
}
