package ring

import (
	"reflect"
	"testing"

	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

func TestMergeBySecond(t *testing.T) {
	t.Parallel()
	item := func(job, at int64) fire.RingItem { return fire.RingItem{JobID: job, FireTime: at, Revision: 1} }
	d := func(token string, shard int, second int64, items ...fire.RingItem) driver.Delivery[fire.RingBucket] {
		return driver.Delivery[fire.RingBucket]{Token: token, Receives: 1, Msg: fire.RingBucket{Shard: shard, Second: second, Items: items}}
	}
	again := func(d driver.Delivery[fire.RingBucket]) driver.Delivery[fire.RingBucket] { d.Receives = 2; return d }
	tests := []struct {
		name string
		in   []driver.Delivery[fire.RingBucket]
		want []merged
	}{
		{"none", nil, nil},
		{"one", []driver.Delivery[fire.RingBucket]{d("a", 1, 10, item(1, 10000))},
			[]merged{{fire.RingBucket{Shard: 1, Second: 10, Items: []fire.RingItem{item(1, 10000)}}, []string{"a"}, false}}},
		{"a bucket received before makes its second's merge fire again", []driver.Delivery[fire.RingBucket]{
			d("a", 1, 10, item(1, 10000)), again(d("b", 2, 10, item(2, 10000))), d("c", 1, 11, item(3, 11000)),
		}, []merged{
			{fire.RingBucket{Shard: 1, Second: 10, Items: []fire.RingItem{item(1, 10000), item(2, 10000)}}, []string{"a", "b"}, true},
			{fire.RingBucket{Shard: 1, Second: 11, Items: []fire.RingItem{item(3, 11000)}}, []string{"c"}, false},
		}},
		{"admin pushes of one second join the scan's bucket, across shards", []driver.Delivery[fire.RingBucket]{
			d("a", 1, 10, item(1, 10000), item(2, 10500)),
			d("b", 2, 11, item(3, 11000)),
			d("c", 3, 10, item(4, 10000)),
			d("d", 1, 10, item(1, 10000)), // the same occurrence twice: dispatch keeps one
		}, []merged{
			{fire.RingBucket{Shard: 1, Second: 10, Items: []fire.RingItem{item(1, 10000), item(2, 10500), item(4, 10000), item(1, 10000)}},
				[]string{"a", "c", "d"}, false},
			{fire.RingBucket{Shard: 2, Second: 11, Items: []fire.RingItem{item(3, 11000)}}, []string{"b"}, false},
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
