package embed

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// npyArray is one array of a NumPy .npz archive: little-endian float32 or
// uint8 data in C order.
type npyArray struct {
	shape []int
	f32   []float32
	u8    []uint8
}

func (a npyArray) size() int {
	n := 1
	for _, d := range a.shape {
		n *= d
	}
	return n
}

// readNPZ reads the float32 and uint8 arrays of an .npz archive (a zip of
// .npy files, compressed or not), keyed by name without ".npy". Arrays of
// other types are skipped.
func readNPZ(path string) (map[string]npyArray, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out := map[string]npyArray{}
	for _, f := range zr.File {
		name, ok := strings.CutSuffix(f.Name, ".npy")
		if !ok {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		a, keep, err := readNPY(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if keep {
			out[name] = a
		}
	}
	return out, nil
}

var (
	npyDescr   = regexp.MustCompile(`'descr':\s*'([^']*)'`)
	npyFortran = regexp.MustCompile(`'fortran_order':\s*(True|False)`)
	npyShape   = regexp.MustCompile(`'shape':\s*\(([^)]*)\)`)
)

// readNPY reads one .npy stream. keep is false for dtypes this package does
// not use.
func readNPY(r io.Reader) (a npyArray, keep bool, err error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return a, false, err
	}
	if string(pre[:6]) != "\x93NUMPY" {
		return a, false, fmt.Errorf("not a .npy file")
	}
	var hlen int
	switch pre[6] {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return a, false, err
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return a, false, err
		}
		hlen = int(binary.LittleEndian.Uint32(b[:]))
	default:
		return a, false, fmt.Errorf("unsupported .npy version %d", pre[6])
	}
	if hlen > 1<<16 {
		return a, false, fmt.Errorf(".npy header of %d bytes", hlen)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return a, false, err
	}
	h := string(hdr)
	d, f, s := npyDescr.FindStringSubmatch(h), npyFortran.FindStringSubmatch(h), npyShape.FindStringSubmatch(h)
	if d == nil || f == nil || s == nil {
		return a, false, fmt.Errorf("bad .npy header %q", h)
	}
	if f[1] == "True" {
		return a, false, fmt.Errorf("fortran-order arrays are not supported")
	}
	for _, p := range strings.Split(s[1], ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return a, false, fmt.Errorf("bad .npy shape %q", s[1])
		}
		a.shape = append(a.shape, n)
	}
	switch d[1] {
	case "<f4":
		raw := make([]byte, 4*a.size())
		if _, err := io.ReadFull(r, raw); err != nil {
			return a, false, err
		}
		a.f32 = make([]float32, a.size())
		for i := range a.f32 {
			a.f32[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return a, true, nil
	case "|u1":
		a.u8 = make([]uint8, a.size())
		if _, err := io.ReadFull(r, a.u8); err != nil {
			return a, false, err
		}
		return a, true, nil
	case "<f8":
		if a.size() != 1 {
			return a, false, nil
		}
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return a, false, err
		}
		a.f32 = []float32{float32(math.Float64frombits(binary.LittleEndian.Uint64(b[:])))}
		return a, true, nil
	}
	return a, false, nil
}
