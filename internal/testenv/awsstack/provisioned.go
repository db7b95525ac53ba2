package awsstack

import (
	"math"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	capkeeper "github.com/xjobdev/xjob/internal/scheduler/capacity"
)

// Provisioned is the stacks' provisioned-capacity option for a set of
// tables (TableBillingMode PROVISIONED): each table and each of its
// global secondary indexes gets read and write capacity under
// Application Auto Scaling, between Min and Max units, tracking Target
// utilisation. The other tables stay on demand.
type Provisioned struct {
	Tables   []string // unprefixed names (dynamostore.TableLogs, …)
	Min, Max float64  // capacity units, each of read and write, per table and index
	Target   float64  // target utilisation, 0.2–0.9 (auto scaling's own range)
	// Keeper, when set, models the scan function's capacity keeper
	// (internal/scheduler/capacity) with PerFire's units: a table
	// whose load, Rate fires a second, the keeper finds cheaper on demand
	// is priced on demand, as the keeper leaves it after its quiet hour
	// (a steady state: the hour itself is KeeperQuietHour's).
	Keeper  *capkeeper.Policy
	PerFire map[string][]capkeeper.Part
	Rate    float64
}

// OnDemandByKeeper reports whether the keeper, in its steady state at
// p.Rate, keeps table on demand: the load costs less so than on the
// capacity it would need. Between the break-even and the keeper's margin
// a table stays in the mode it is in, and is priced provisioned, the
// stack's own.
func (p Provisioned) OnDemandByKeeper(table string) bool {
	parts, ok := p.PerFire[table]
	if p.Keeper == nil || !ok {
		return false
	}
	od, pr := capkeeper.New(*p.Keeper, parts, nil).Costs(p.Rate)
	return od < pr
}

// KeeperQuietHour is what the hour before the keeper's switch to on
// demand costs at the tables' minimum capacity (each table and index,
// read and write): paid once each time a load stops, not per month.
func (p Provisioned) KeeperQuietHour(cp CapacityPrices) float64 {
	return float64(p.Parts()) * max(p.Min, 1) * (cp.WCUHour + cp.RCUHour)
}

// Parts counts the tables and indexes p puts on provisioned capacity:
// each scales reads and writes, and each scaling policy's target tracking
// keeps two CloudWatch alarms (billed as alarms).
func (p Provisioned) Parts() int {
	n := 0
	for _, s := range dynamostore.TableSpecs(dynamostore.TablesWithPrefix("")) {
		if slices.Contains(p.Tables, strings.TrimPrefix(aws.ToString(s.TableName), "-")) {
			n += 1 + len(s.GlobalSecondaryIndexes)
		}
	}
	return n
}

// CapacityPrices are provisioned capacity's us-east-1 list prices per
// unit-hour.
type CapacityPrices struct {
	WCUHour, RCUHour float64
}

// ListCapacityPrices are us-east-1 list prices for provisioned capacity
// (standard table class).
func ListCapacityPrices() CapacityPrices { return CapacityPrices{WCUHour: 0.00065, RCUHour: 0.00013} }

// BurstSeconds is how much unused capacity DynamoDB keeps for bursts:
// up to 300 seconds of a table's provisioned units.
const BurstSeconds = 300

// ScaleUpDelay is how long auto scaling takes to raise capacity: its
// alarm wants two consecutive minutes above the target, and the update
// follows within about a minute.
const ScaleUpDelay = 180

// CapacityCost is what a metered interval's load on the provisioned
// tables costs under Provisioned.
type CapacityCost struct {
	// Capacity is the units each table and index was provisioned with
	// when the interval started ("table/index" w|r → units), the steady
	// state auto scaling settles at for the interval's load.
	Capacity map[string]float64
	// Dollars is the capacity-hours of the interval.
	Dollars float64
	// OnDemand is what the same units cost on demand (the figures'
	// DynamoDB request units for these tables), which Dollars replaces.
	OnDemand float64
	// Throttled is the units past capacity and burst credit: requests
	// DynamoDB would have refused (and the SDK retried).
	Throttled float64
	// OnDemandTables are the tables the keeper keeps on demand at the
	// interval's rate (priced so: no capacity).
	OnDemandTables []string
	// Load is each table's and index's mean units a second over the
	// interval ("table/index" w|r), every table's, provisioned or not:
	// what decides which tables carry a load worth provisioning.
	Load map[string]float64
}

// Price prices load (Meter.TableSeconds over an interval of seconds) for
// the provisioned tables; prefix is the deployment's table prefix. A
// table or index starts the interval at the capacity auto scaling keeps
// for the interval's load — its busiest minute's mean (the interval's
// mean when shorter) over Target, between Min and Max — with its burst
// credit full; each second spends the load, draws on the credit past the
// capacity and throttles past the credit; a load above Target for
// ScaleUpDelay raises the capacity to the load over Target. Capacity is
// billed per unit-second (AWS bills unit-hours), whether used or not.
func (p Provisioned) Price(load map[string][]TableLoad, seconds float64, prefix string, on Prices, cp CapacityPrices) CapacityCost {
	out := CapacityCost{Capacity: map[string]float64{}, Load: map[string]float64{}}
	if seconds <= 0 || p.Target <= 0 {
		return out
	}
	for part, secs := range load {
		for _, s := range secs {
			out.Load[part+" w"] += s.WCU / seconds
			out.Load[part+" r"] += s.RCU / seconds
		}
	}
	specs := map[string]*dynamodb.CreateTableInput{}
	for _, s := range dynamostore.TableSpecs(dynamostore.TablesWithPrefix(prefix)) {
		specs[aws.ToString(s.TableName)] = s
	}
	for _, table := range p.Tables {
		name := prefix + "-" + table
		keptOnDemand := p.OnDemandByKeeper(table)
		if keptOnDemand {
			out.OnDemandTables = append(out.OnDemandTables, table)
		}
		// The table and each of its indexes has capacity of its own, and
		// pays at least the minimum without any load.
		parts := []string{name}
		if s, ok := specs[name]; ok {
			for _, g := range s.GlobalSecondaryIndexes {
				parts = append(parts, name+"/"+aws.ToString(g.IndexName))
			}
		}
		for k := range load {
			if strings.HasPrefix(k, name+"/") && !slices.Contains(parts, k) {
				parts = append(parts, k)
			}
		}
		slices.Sort(parts)
		for _, part := range parts {
			secs := load[part]
			for _, kind := range []string{"w", "r"} {
				unit, price := on.WRU, cp.WCUHour
				if kind == "r" {
					unit, price = on.RRU, cp.RCUHour
				}
				var total float64
				var first int64
				if len(secs) > 0 {
					first = secs[0].At
				}
				n := int(math.Ceil(seconds))
				series := make([]float64, n)
				for _, s := range secs {
					i := int(s.At - first)
					if i < 0 || i >= n {
						continue
					}
					v := s.WCU
					if kind == "r" {
						v = s.RCU
					}
					series[i] += v
					total += v
				}
				out.OnDemand += total * unit
				if keptOnDemand {
					out.Dollars += total * unit
					continue
				}
				capacity := p.steady(series)
				out.Capacity[part+" "+kind] = capacity
				dollars, throttled := p.simulate(series, capacity, price)
				out.Dollars += dollars
				out.Throttled += throttled
			}
		}
	}
	return out
}

// steady is the capacity auto scaling keeps for a load of series (units
// per second): the busiest minute's mean over Target, rounded up, between
// Min and Max.
func (p Provisioned) steady(series []float64) float64 {
	win := min(60, len(series))
	var best float64
	for i := 0; i+win <= len(series) && win > 0; i++ {
		var sum float64
		for _, v := range series[i : i+win] {
			sum += v
		}
		best = max(best, sum/float64(win))
	}
	c := math.Ceil(best / p.Target)
	return min(max(c, p.Min, 1), max(p.Max, p.Min, 1))
}

// simulate bills capacity per second and spends series against it with
// DynamoDB's burst credit, raising the capacity after ScaleUpDelay
// seconds above the target; it returns the dollars and the throttled
// units.
func (p Provisioned) simulate(series []float64, capacity, unitHour float64) (dollars, throttled float64) {
	credit := capacity * BurstSeconds
	above := 0
	for _, v := range series {
		dollars += capacity * unitHour / 3600
		credit = min(credit+capacity-v, capacity*BurstSeconds)
		if credit < 0 {
			throttled += -credit
			credit = 0
		}
		if v > capacity*p.Target {
			above++
		} else {
			above = 0
		}
		if above >= ScaleUpDelay {
			capacity = min(math.Ceil(v/p.Target), max(p.Max, p.Min, 1))
			above = 0
		}
	}
	return dollars, throttled
}
