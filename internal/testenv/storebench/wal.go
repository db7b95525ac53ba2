package storebench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// WALFramePages lists the page number of every valid frame of the
// SQLite WAL at path, in order: the frames after its 32-byte header whose
// salts are the header's (a frame with other salts is left over from
// before the WAL's last restart, and ends the valid ones). The store
// benchmarks and walpin name each page's b-tree from it to tell which
// tables a workload writes.
func WALFramePages(path string) ([]uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open the WAL: %w", err)
	}
	defer f.Close()
	return walFramePages(f)
}

func walFramePages(r io.Reader) ([]uint32, error) {
	var hdr [32]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("read the WAL header: %w", err)
	}
	pageSize := int(binary.BigEndian.Uint32(hdr[8:12]))
	if pageSize < 512 || pageSize > 65536 || pageSize&(pageSize-1) != 0 {
		return nil, fmt.Errorf("the WAL header's page size %d is not a power of two from 512 to 65536", pageSize)
	}
	salt1, salt2 := binary.BigEndian.Uint32(hdr[16:20]), binary.BigEndian.Uint32(hdr[20:24])
	frame := make([]byte, 24+pageSize)
	var out []uint32
	for {
		if _, err := io.ReadFull(r, frame); errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("read a WAL frame: %w", err)
		}
		if binary.BigEndian.Uint32(frame[8:12]) != salt1 || binary.BigEndian.Uint32(frame[12:16]) != salt2 {
			return out, nil
		}
		out = append(out, binary.BigEndian.Uint32(frame[0:4]))
	}
}
