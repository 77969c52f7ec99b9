package ledger

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports allot_gpu_seconds_total{namespace,model,basis}: the
// ledger's device-seconds per tenant and model, on the allocated basis and
// the used basis (utilization × time, where device stats exist). The sums
// come from the segments, so they only grow and survive restarts; they are
// read at most every CacheFor.
type Collector struct {
	DB       *DB
	CacheFor time.Duration

	mu      sync.Mutex
	at      time.Time
	samples []prometheus.Metric
}

var gpuSecondsDesc = prometheus.NewDesc("allot_gpu_seconds_total",
	"Accelerator device-seconds recorded by the ledger, per namespace and device model; basis allocated (reserved) or used (utilization x time).",
	[]string{"namespace", "model", "basis"}, nil)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- gpuSecondsDesc }

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.samples == nil || time.Since(c.at) > c.CacheFor {
		if s, err := c.read(); err == nil {
			c.samples, c.at = s, time.Now()
		}
	}
	for _, m := range c.samples {
		ch <- m
	}
}

func (c *Collector) read() ([]prometheus.Metric, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := c.DB.sql.QueryContext(ctx, `SELECT namespace, model,
		CAST(SUM(devices * (end_ms - start_ms)) AS BIGINT), CAST(SUM(used_device_ms) AS BIGINT)
		FROM segments WHERE model <> '' GROUP BY namespace, model`)
	if err != nil {
		return nil, err
	}
	out := []prometheus.Metric{}
	err = scanAll(rows, func(sc func(...any) error) error {
		var ns, model string
		var alloc, used int64
		if err := sc(&ns, &model, &alloc, &used); err != nil {
			return err
		}
		out = append(out,
			prometheus.MustNewConstMetric(gpuSecondsDesc, prometheus.CounterValue, float64(alloc)/1000, ns, model, "allocated"),
			prometheus.MustNewConstMetric(gpuSecondsDesc, prometheus.CounterValue, float64(used)/1000, ns, model, "used"))
		return nil
	})
	return out, err
}
