package metric

import "github.com/prometheus/client_golang/prometheus"

// Collector is the collector Handler registers, for tests.
func Collector(m *Metrics, g Gauges) prometheus.Collector { return collector{m: m, g: g} }
