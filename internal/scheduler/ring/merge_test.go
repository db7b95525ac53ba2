package ring

import (
	"reflect"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

func TestMergeBySecond(t *testing.T) {
	t.Parallel()
	item := func(job, at int64) xjob.RingItem { return xjob.RingItem{JobID: job, FireTime: at, Revision: 1} }
	d := func(token string, shard int, second int64, items ...xjob.RingItem) driver.Delivery[xjob.RingBucket] {
		return driver.Delivery[xjob.RingBucket]{Token: token, Msg: xjob.RingBucket{Shard: shard, Second: second, Items: items}}
	}
	tests := []struct {
		name string
		in   []driver.Delivery[xjob.RingBucket]
		want []merged
	}{
		{"none", nil, nil},
		{"one", []driver.Delivery[xjob.RingBucket]{d("a", 1, 10, item(1, 10000))},
			[]merged{{xjob.RingBucket{Shard: 1, Second: 10, Items: []xjob.RingItem{item(1, 10000)}}, []string{"a"}}}},
		{"admin pushes of one second join the scan's bucket, across shards", []driver.Delivery[xjob.RingBucket]{
			d("a", 1, 10, item(1, 10000), item(2, 10500)),
			d("b", 2, 11, item(3, 11000)),
			d("c", 3, 10, item(4, 10000)),
			d("d", 1, 10, item(1, 10000)), // the same occurrence twice: dispatch keeps one
		}, []merged{
			{xjob.RingBucket{Shard: 1, Second: 10, Items: []xjob.RingItem{item(1, 10000), item(2, 10500), item(4, 10000), item(1, 10000)}},
				[]string{"a", "c", "d"}},
			{xjob.RingBucket{Shard: 2, Second: 11, Items: []xjob.RingItem{item(3, 11000)}}, []string{"b"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := mergeBySecond(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("mergeBySecond = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
