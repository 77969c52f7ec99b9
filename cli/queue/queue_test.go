package queue

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	gq "github.com/allot-sh/allot/governor/quota"
)

func ptr[T any](v T) *T { return &v }

// group builds a task group of count allocations with one task.
func group(count int, cpu, mem int, devices ...*api.RequestedDevice) *api.TaskGroup {
	return &api.TaskGroup{Count: ptr(count), Tasks: []*api.Task{{Resources: &api.Resources{CPU: ptr(cpu), MemoryMB: ptr(mem), Devices: devices}}}}
}

func TestRequest(t *testing.T) {
	tests := map[string]struct {
		job  *api.Job
		want gq.Vector
	}{
		"gang of 4 x 8 GPUs": {job: &api.Job{TaskGroups: []*api.TaskGroup{
			group(4, 1000, 2048, &api.RequestedDevice{Name: "nvidia/gpu", Count: ptr(uint64(8))})}},
			want: gq.Vector{"cpu": 4000, "memory": 8192, "nvidia/gpu": 32}},
		"two groups": {job: &api.Job{TaskGroups: []*api.TaskGroup{group(1, 100, 64),
			group(2, 200, 128, &api.RequestedDevice{Name: "huawei/npu/Ascend910B", Count: ptr(uint64(8))})}},
			want: gq.Vector{"cpu": 500, "memory": 320, "huawei/npu/Ascend910B": 16}},
		"count unset is 1": {job: &api.Job{TaskGroups: []*api.TaskGroup{{Tasks: []*api.Task{{Resources: &api.Resources{CPU: ptr(100)}}}}}},
			want: gq.Vector{"cpu": 100}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { must.Eq(t, tc.want, Request(tc.job)) })
	}
}

func TestWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	must.Eq(t, "3m12s", Wait(now, now.Add(-192*time.Second-300*time.Millisecond)))
	must.Eq(t, "-", Wait(now, time.Time{}))
	must.Eq(t, "0s", Wait(now, now.Add(time.Minute)))
}
