package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// taskScrapeTimeout bounds the store query behind one scrape.
const taskScrapeTimeout = 5 * time.Second

// taskCollector reads the task gauges from the store at scrape time, so
// they are exact across replicas sharing one database rather than counted
// by each process.
type taskCollector struct {
	byStatus, degraded, pending *prometheus.Desc

	mu    sync.Mutex
	stats func(context.Context) (TaskStats, error)
}

var _ prometheus.Collector = (*taskCollector)(nil)

func newTaskCollector() *taskCollector {
	return &taskCollector{
		byStatus: prometheus.NewDesc("antler_tasks", "Durable tasks in the store by status.", []string{"status"}, nil),
		degraded: prometheus.NewDesc("antler_tasks_tracking_degraded", "Active durable tasks whose status polls keep failing (tracking_degraded).", nil, nil),
		pending:  prometheus.NewDesc("antler_task_answers_pending", "Answers to input_required tasks recorded and not delivered yet.", nil, nil),
	}
}

func (c *taskCollector) set(f func(context.Context) (TaskStats, error)) {
	c.mu.Lock()
	c.stats = f
	c.mu.Unlock()
}

func (c *taskCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.byStatus
	ch <- c.degraded
	ch <- c.pending
}

func (c *taskCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	f := c.stats
	c.mu.Unlock()
	if f == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), taskScrapeTimeout)
	defer cancel()
	st, err := f(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.byStatus, err)
		return
	}
	for status, n := range st.ByStatus {
		ch <- prometheus.MustNewConstMetric(c.byStatus, prometheus.GaugeValue, float64(n), status)
	}
	ch <- prometheus.MustNewConstMetric(c.degraded, prometheus.GaugeValue, float64(st.Degraded))
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(st.AnswersPending))
}
