package storebench

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
)

// wal builds a WAL of 512-byte pages: a header with salts s1, s2 and one
// frame per page number, each frame with the salts given for it.
func wal(s1, s2 uint32, frames ...[3]uint32) []byte {
	var b bytes.Buffer
	hdr := make([]byte, 32)
	binary.BigEndian.PutUint32(hdr[8:12], 512)
	binary.BigEndian.PutUint32(hdr[16:20], s1)
	binary.BigEndian.PutUint32(hdr[20:24], s2)
	b.Write(hdr)
	for _, f := range frames {
		fr := make([]byte, 24+512)
		binary.BigEndian.PutUint32(fr[0:4], f[0])
		binary.BigEndian.PutUint32(fr[8:12], f[1])
		binary.BigEndian.PutUint32(fr[12:16], f[2])
		b.Write(fr)
	}
	return b.Bytes()
}

func TestWALFramePages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   []byte
		want []uint32
		err  bool
	}{
		{"frames in order", wal(7, 9, [3]uint32{3, 7, 9}, [3]uint32{5, 7, 9}, [3]uint32{3, 7, 9}), []uint32{3, 5, 3}, false},
		{"an old frame ends the valid ones", wal(7, 9, [3]uint32{3, 7, 9}, [3]uint32{4, 6, 9}, [3]uint32{5, 7, 9}), []uint32{3}, false},
		{"a torn last frame is left out", wal(7, 9, [3]uint32{3, 7, 9}, [3]uint32{5, 7, 9})[:32+536+100], []uint32{3}, false},
		{"header only", wal(1, 2), nil, false},
		{"short header", []byte{1, 2, 3}, nil, true},
		{"bad page size", append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0}, make([]byte, 20)...), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := walFramePages(bytes.NewReader(tc.in))
			if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
				t.Fatalf("walFramePages = %v, %v; want %v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// FuzzWALFramePages: any bytes give frames or an error, never a panic or
// more frames than the bytes can hold.
func FuzzWALFramePages(f *testing.F) {
	f.Add(wal(7, 9, [3]uint32{3, 7, 9}, [3]uint32{5, 7, 9}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		pages, err := walFramePages(bytes.NewReader(b))
		if err == nil && len(pages)*(24+512) > len(b) {
			t.Fatalf("%d frames from %d bytes", len(pages), len(b))
		}
	})
}
