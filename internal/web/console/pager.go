package console

import (
	"net/url"
	"strconv"
	"strings"
)

// pageSizes are the list pages' sizes; the second is the default.
var pageSizes = []int{20, 50, 100}

// pager is a keyset-paged list's navigation. The pages already passed
// travel in the URL (trail: their cursors, "." for the first page), so
// "previous" needs no offset query and stays as cheap as "next".
type pager struct {
	Size          int
	Total         string
	Prev, Next    string
	First         string
	Trail, Cursor string
}

// newPager reads the page size, cursor and trail of a list request.
func newPager(q url.Values) pager {
	pg := pager{Size: pageSizes[1], Cursor: q.Get("cursor"), Trail: q.Get("trail")}
	if n, err := strconv.Atoi(q.Get("size")); err == nil {
		for _, s := range pageSizes {
			if s == n {
				pg.Size = n
			}
		}
	}
	return pg
}

// links fills Prev, Next and First: path with q (the list's filters)
// plus the cursors; next is the cursor after this page ("" at the end).
func (pg *pager) links(path string, q url.Values, next string) {
	at := func(cursor, trail string) string {
		v := url.Values{}
		for k, vs := range q {
			if k != "cursor" && k != "trail" && k != "flash" {
				v[k] = vs
			}
		}
		v.Set("size", strconv.Itoa(pg.Size))
		if cursor != "" {
			v.Set("cursor", cursor)
		}
		if trail != "" {
			v.Set("trail", trail)
		}
		return path + "?" + v.Encode()
	}
	if next != "" {
		here := pg.Cursor
		if here == "" {
			here = "."
		}
		trail := here
		if pg.Trail != "" {
			trail = pg.Trail + "," + here
		}
		pg.Next = at(next, trail)
	}
	if pg.Cursor != "" {
		pg.First = at("", "")
		parts := strings.Split(pg.Trail, ",")
		prev, rest := parts[len(parts)-1], strings.Join(parts[:len(parts)-1], ",")
		if pg.Trail == "" || prev == "." {
			prev = ""
		}
		pg.Prev = at(prev, rest)
	}
}
