package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/nomad/api"
)

// PoolModel names a node pool and a device model ("vendor/type/name").
type PoolModel struct {
	Pool  string
	Model string
}

// Stock is what a pool holds of a model at one moment: Total devices,
// Down (unhealthy, or on a node that is down, draining or ineligible) and
// Waiting (devices asked for by queued jobs that this pool could run).
type Stock struct {
	PoolModel
	Total, Down, Waiting int64
}

// Inventory counts the devices of every pool and model on nodes, with the
// waiting demand per pool and model, as if none were in use.
func Inventory(nodes []*api.NodeListStub, waiting map[PoolModel]int64) []Stock {
	return InventoryInUse(nodes, waiting, nil)
}

// InventoryInUse is Inventory with the devices in use per node and model
// (open segments): a device in use is allocated, never down, so a
// draining node's running work stays Allocated (as Slurm counts it) and
// only its free devices are Down.
func InventoryInUse(nodes []*api.NodeListStub, waiting map[PoolModel]int64, inUse map[NodeModel]int64) []Stock {
	m := map[PoolModel]*Stock{}
	for _, n := range nodes {
		if n.NodeResources == nil {
			continue
		}
		unusable := n.Status != api.NodeStatusReady || n.Drain || n.SchedulingEligibility == api.NodeSchedulingIneligible
		for _, g := range n.NodeResources.Devices {
			if g == nil {
				continue
			}
			k := PoolModel{Pool: n.NodePool, Model: g.Vendor + "/" + g.Type + "/" + g.Name}
			s := m[k]
			if s == nil {
				s = &Stock{PoolModel: k}
				m[k] = s
			}
			total, down := countDevices(g.Instances, unusable)
			free := total - inUse[NodeModel{Node: n.ID, Model: k.Model}]
			if down > free {
				down = free
			}
			if down < 0 {
				down = 0
			}
			s.Total += total
			s.Down += down
		}
	}
	for k, w := range waiting {
		if s := m[k]; s != nil {
			s.Waiting = w
		}
	}
	out := make([]Stock, 0, len(m))
	for _, s := range m {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i].PoolModel, out[j].PoolModel) })
	return out
}

// NodeModel names a node and a device model.
type NodeModel struct {
	Node  string
	Model string
}

func countDevices(inst []*api.NodeDevice, unusable bool) (total, down int64) {
	for _, d := range inst {
		total++
		if unusable || d == nil || !d.Healthy {
			down++
		}
	}
	return total, down
}

// InUse returns the devices of open segments per node and model.
func (d *DB) InUse(ctx context.Context) (map[NodeModel]int64, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT node_id, model, CAST(SUM(devices) AS BIGINT) FROM segments
		WHERE open = 1 AND model <> '' GROUP BY node_id, model`)
	if err != nil {
		return nil, fmt.Errorf("reading devices in use: %w", err)
	}
	out := map[NodeModel]int64{}
	err = scanAll(rows, func(sc func(...any) error) error {
		var k NodeModel
		var n int64
		if err := sc(&k.Node, &k.Model, &n); err != nil {
			return err
		}
		out[k] = n
		return nil
	})
	return out, err
}

func less(a, b PoolModel) bool {
	if a.Pool != b.Pool {
		return a.Pool < b.Pool
	}
	return a.Model < b.Model
}

// SampleCapacity records the stock at now. Each pool and model has a run of
// rows; the latest row is extended to now while the stock is unchanged,
// else it is closed at now and a new row starts. A row holds the stock
// seen at its start, so after a restart the gap is counted with the stock
// last seen (the best the ledger knows).
func (d *DB) SampleCapacity(ctx context.Context, stock []Stock, now time.Time) error {
	ms := now.UnixMilli()
	return d.tx(ctx, func(tx *sql.Tx) error {
		for _, s := range stock {
			if err := d.sampleOne(ctx, tx, s, ms); err != nil {
				return err
			}
		}
		return nil
	})
}

func (d *DB) sampleOne(ctx context.Context, tx *sql.Tx, s Stock, ms int64) error {
	var from, to, total, down, waiting int64
	err := tx.QueryRowContext(ctx, d.q(`SELECT from_ms, to_ms, total, down, waiting FROM capacity_samples
		WHERE node_pool = ? AND model = ? ORDER BY from_ms DESC LIMIT 1`), s.Pool, s.Model).
		Scan(&from, &to, &total, &down, &waiting)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return d.insertSample(ctx, tx, s, ms)
	case err != nil:
		return fmt.Errorf("reading capacity of %s %s: %w", s.Pool, s.Model, err)
	case ms <= to:
		return nil
	}
	if _, err := tx.ExecContext(ctx, d.q(`UPDATE capacity_samples SET to_ms = ? WHERE node_pool = ? AND model = ? AND from_ms = ?`),
		ms, s.Pool, s.Model, from); err != nil {
		return fmt.Errorf("extending capacity of %s %s: %w", s.Pool, s.Model, err)
	}
	if total == s.Total && down == s.Down && waiting == s.Waiting {
		return nil
	}
	return d.insertSample(ctx, tx, s, ms)
}

func (d *DB) insertSample(ctx context.Context, tx *sql.Tx, s Stock, ms int64) error {
	_, err := tx.ExecContext(ctx, d.q(`INSERT INTO capacity_samples (node_pool, model, from_ms, to_ms, total, down, waiting)
		VALUES (?, ?, ?, ?, ?, ?, ?)`), s.Pool, s.Model, ms, ms, s.Total, s.Down, s.Waiting)
	if err != nil {
		return fmt.Errorf("recording capacity of %s %s: %w", s.Pool, s.Model, err)
	}
	return nil
}

// Utilization is one pool and model's device time over a window, in
// device-seconds: Capacity = Allocated + Idle + Down. Reserved-waiting is
// the queued demand that could run in this pool, and Shortage ranks
// pools: waiting demand over capacity that is up.
type Utilization struct {
	Pool       string  `json:"pool"`
	Model      string  `json:"model"`
	Capacity   float64 `json:"capacity_device_seconds"`
	Allocated  float64 `json:"allocated_device_seconds"`
	Idle       float64 `json:"idle_device_seconds"`
	Down       float64 `json:"down_device_seconds"`
	Waiting    float64 `json:"reserved_waiting_device_seconds"`
	Shortage   float64 `json:"shortage"`
	Overbooked bool    `json:"overbooked,omitempty"`
}

// Capacity reports each pool and model over [since, until), most short
// first. Allocated device time outside any sampled capacity is counted as
// allocated too and flags the row Overbooked (Idle is then 0).
func (d *DB) Capacity(ctx context.Context, since, until time.Time) ([]Utilization, error) {
	m := map[PoolModel]*Utilization{}
	get := func(k PoolModel) *Utilization {
		if m[k] == nil {
			m[k] = &Utilization{Pool: k.Pool, Model: k.Model}
		}
		return m[k]
	}
	s, u := since.UnixMilli(), until.UnixMilli()
	rows, err := d.sql.QueryContext(ctx, d.q(`SELECT node_pool, model,
		CAST(SUM(total * (least(to_ms, ?) - greatest(from_ms, ?))) AS BIGINT),
		CAST(SUM(down * (least(to_ms, ?) - greatest(from_ms, ?))) AS BIGINT),
		CAST(SUM(waiting * (least(to_ms, ?) - greatest(from_ms, ?))) AS BIGINT)
		FROM capacity_samples WHERE to_ms > ? AND from_ms < ? GROUP BY node_pool, model`), u, s, u, s, u, s, s, u)
	if err != nil {
		return nil, fmt.Errorf("reading capacity: %w", err)
	}
	err = scanAll(rows, func(sc func(...any) error) error {
		var k PoolModel
		var total, down, waiting int64
		if err := sc(&k.Pool, &k.Model, &total, &down, &waiting); err != nil {
			return err
		}
		x := get(k)
		x.Capacity, x.Down, x.Waiting = float64(total)/1000, float64(down)/1000, float64(waiting)/1000
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := d.allocatedByPool(ctx, s, u, get); err != nil {
		return nil, err
	}
	return finishUtilization(m), nil
}

func (d *DB) allocatedByPool(ctx context.Context, s, u int64, get func(PoolModel) *Utilization) error {
	floor, err := d.startFloor(ctx, s)
	if err != nil {
		return err
	}
	rows, err := d.sql.QueryContext(ctx, d.q(`SELECT node_pool, model,
		CAST(SUM(devices * (least(end_ms, ?) - greatest(start_ms, ?))) AS BIGINT)
		FROM segments WHERE model <> '' AND end_ms > ? AND start_ms < ? AND start_ms > ? GROUP BY node_pool, model`),
		u, s, s, u, floor)
	if err != nil {
		return fmt.Errorf("reading allocated device time: %w", err)
	}
	return scanAll(rows, func(sc func(...any) error) error {
		var k PoolModel
		var alloc int64
		if err := sc(&k.Pool, &k.Model, &alloc); err != nil {
			return err
		}
		get(k).Allocated = float64(alloc) / 1000
		return nil
	})
}

func finishUtilization(m map[PoolModel]*Utilization) []Utilization {
	out := make([]Utilization, 0, len(m))
	for _, x := range m {
		x.Idle = x.Capacity - x.Allocated - x.Down
		if x.Idle < 0 {
			x.Overbooked, x.Idle = x.Idle < -0.001*x.Capacity-1, 0
		}
		if up := x.Capacity - x.Down; up > 0 {
			x.Shortage = x.Waiting / up
		} else if x.Waiting > 0 {
			x.Shortage = x.Waiting
		}
		out = append(out, *x)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Shortage != out[j].Shortage {
			return out[i].Shortage > out[j].Shortage
		}
		return less(PoolModel{out[i].Pool, out[i].Model}, PoolModel{out[j].Pool, out[j].Model})
	})
	return out
}

// scanAll calls fn for each row with the row's Scan, then closes rows.
func scanAll(rows *sql.Rows, fn func(scan func(...any) error) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.Scan); err != nil {
			return fmt.Errorf("reading ledger rows: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading ledger rows: %w", err)
	}
	return nil
}
