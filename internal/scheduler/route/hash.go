package route

import (
	"cmp"
	"crypto/md5" //nolint:gosec // xxl-job's ring hash, not a security use
	"encoding/binary"
	"slices"
	"strconv"
	"sync"
)

// VirtualNodes is how many points each address has on the consistent-hash
// ring (xxl-job's VIRTUAL_NODE_NUM since 2.x).
const VirtualNodes = 100

// ConsistentHash returns the address xxl-job's CONSISTENT_HASH strategy
// picks for jobID: a ring of VirtualNodes points per address, each at
// hash("SHARD-" + address + "-NODE-" + i), and the job at hash(decimal
// jobID); the job goes to the first point at or after its hash, wrapping to
// the smallest. It builds the ring on every call, as xxl-job does; Router
// caches rings. It returns "" for an empty list.
func ConsistentHash(jobID int64, addrs []string) string {
	if len(addrs) == 0 {
		return ""
	}
	return buildRing(addrs).pick(jobID)
}

// ringHash is xxl-job's hash: MD5 of the UTF-8 key, digest bytes 0-3 read
// as a little-endian unsigned 32-bit integer.
func ringHash(key []byte) uint32 {
	d := md5.Sum(key) //nolint:gosec // see import
	return binary.LittleEndian.Uint32(d[:4])
}

// ring is an immutable consistent-hash ring, sorted by hash.
type ring struct {
	addrs  []string // the list it was built from, to check cache hits
	hashes []uint32
	owners []string
}

// buildRing builds the ring as xxl-job fills its TreeMap: points are put
// in address order, then node order, and a later point with an equal hash
// replaces the earlier one (TreeMap.put), so we keep the last of each run
// of equal hashes after a stable sort.
func buildRing(addrs []string) *ring {
	type point struct {
		hash  uint32
		owner string
	}
	points := make([]point, 0, len(addrs)*VirtualNodes)
	var buf []byte
	for _, a := range addrs {
		buf = append(buf[:0], "SHARD-"...)
		buf = append(buf, a...)
		buf = append(buf, "-NODE-"...)
		prefix := len(buf)
		for i := range VirtualNodes {
			buf = strconv.AppendInt(buf[:prefix], int64(i), 10)
			points = append(points, point{ringHash(buf), a})
		}
	}
	slices.SortStableFunc(points, func(x, y point) int { return cmp.Compare(x.hash, y.hash) })
	r := &ring{
		addrs:  slices.Clone(addrs),
		hashes: make([]uint32, 0, len(points)),
		owners: make([]string, 0, len(points)),
	}
	for i, p := range points {
		if i+1 < len(points) && points[i+1].hash == p.hash {
			continue // a later put of the same key wins
		}
		r.hashes = append(r.hashes, p.hash)
		r.owners = append(r.owners, p.owner)
	}
	return r
}

// pick returns the owner of the first point with hash ≥ the job's hash
// (TreeMap.tailMap(jobHash).firstKey()), or of the smallest point.
func (r *ring) pick(jobID int64) string {
	var buf [20]byte
	h := ringHash(strconv.AppendInt(buf[:0], jobID, 10))
	i, _ := slices.BinarySearch(r.hashes, h)
	if i == len(r.hashes) {
		i = 0
	}
	return r.owners[i]
}

// ringCache keeps rings by address list, so that routing a job of a group
// whose executors did not change costs one MD5 and a binary search instead
// of building a ring (100 MD5s per address and a sort).
type ringCache struct {
	limit int // ≤ 0 disables the cache
	mu    sync.RWMutex
	m     map[uint64]*ring
}

func (c *ringCache) get(addrs []string) *ring {
	if c.limit <= 0 {
		return buildRing(addrs)
	}
	key := listKey(addrs)
	c.mu.RLock()
	r := c.m[key]
	c.mu.RUnlock()
	if r != nil && slices.Equal(r.addrs, addrs) {
		return r
	}
	r = buildRing(addrs)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= c.limit {
		c.m = make(map[uint64]*ring)
	}
	c.m[key] = r // on a (rare) key collision the newer list wins the slot
	c.mu.Unlock()
	return r
}

// listKey hashes an address list (FNV-1a, with a separator after each
// address so that ["ab"] and ["a","b"] differ).
func listKey(addrs []string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, a := range addrs {
		for i := 0; i < len(a); i++ {
			h = (h ^ uint64(a[i])) * prime
		}
		h *= prime // separator byte 0: h ^ 0 == h
	}
	return h
}
