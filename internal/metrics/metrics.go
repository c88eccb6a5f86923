// Package metrics is Antler's Prometheus instrumentation: one registry
// holding every series the host exports under the antler_ prefix, and the
// typed methods the packages that do the work call to move them.
//
// Every method is safe on a nil *Metrics and does nothing, so a package
// takes a *Metrics in its options and a test or an embedder that wants no
// metrics passes none. No label carries a value a caller chooses freely
// (a thread id, a user id, arguments) or a secret: server and plugin
// labels come from the operator's configuration, the rest from fixed sets.
package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcomes of a tool call.
const (
	// OutcomeOK is a result the server answered without isError.
	OutcomeOK = "ok"
	// OutcomeToolError is a result with isError: the tool ran and failed.
	OutcomeToolError = "tool_error"
	// OutcomeFailed is no result: a timeout, a transport failure, an
	// upstream JSON-RPC error.
	OutcomeFailed = "failed"
	// OutcomeDenied is a call refused before it reached the server (a
	// credential layer, a plugin, a policy).
	OutcomeDenied = "denied"
)

// Plugin roles and carriers.
const (
	RoleInterceptor = "interceptor"
	RoleDriver      = "driver"
	CarrierWasm     = "wasm"
	CarrierProcess  = "process"
)

// Session events of a stdio session.
const (
	SessionStarted = "started"
	// SessionEvicted is a session closed to make room (LRU, per-user limit).
	SessionEvicted = "evicted"
	// SessionIdle is a session closed after its idle timeout.
	SessionIdle = "idle"
	// SessionCrashed is a child process that exited on its own, or a
	// connection lost.
	SessionCrashed = "crashed"
	// SessionClosed is a session retired with its thread, a change of its
	// server's settings, or the host stopping.
	SessionClosed = "closed"
)

// Notification delivery outcomes.
const (
	DeliveryDelivered = "delivered"
	DeliveryRetried   = "retried"
	// DeliveryDeadLetter is an event given up on after its attempts.
	DeliveryDeadLetter = "dead_letter"
)

// Config reload outcomes.
const (
	ReloadApplied  = "applied"
	ReloadRejected = "rejected"
)

// latencyBuckets cover a cached interceptor (tens of µs) to a slow upstream
// (a minute), in seconds.
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// TaskStats is what the task store holds at a scrape.
type TaskStats struct {
	// ByStatus counts tasks per status (working, input_required,
	// completed, failed, cancelled, ...).
	ByStatus map[string]int
	// Degraded counts active tasks whose tracking is degraded.
	Degraded int
	// AnswersPending counts answers recorded but not delivered yet.
	AnswersPending int
}

// Metrics holds the registry and every series. Create it with New.
type Metrics struct {
	reg *prometheus.Registry

	toolCalls         *prometheus.CounterVec
	toolCallSeconds   *prometheus.HistogramVec
	pluginCalls       *prometheus.CounterVec
	pluginCallSeconds *prometheus.HistogramVec
	sessionsLive      *prometheus.GaugeVec
	sessionEvents     *prometheus.CounterVec
	oauthFetches      *prometheus.CounterVec
	discoverySeconds  *prometheus.HistogramVec
	discoveryFailures *prometheus.CounterVec
	taskPollSeconds   *prometheus.HistogramVec
	deliveries        *prometheus.CounterVec
	configReloads     *prometheus.CounterVec
	configRejected    *prometheus.CounterVec
	catalogDrifts     *prometheus.CounterVec

	tasks *taskCollector
}

// New creates the metrics on a registry of their own, with the Go runtime
// and process collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg,
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "antler_tool_calls_total",
			Help: "Tool calls by server, door (rest, mcp, task) and outcome (ok, tool_error, failed, denied)."}, []string{"server", "door", "outcome"}),
		toolCallSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "antler_tool_call_duration_seconds",
			Help: "Tool call latency from the door to the upstream's answer, by server and door.", Buckets: latencyBuckets}, []string{"server", "door"}),
		pluginCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "antler_plugin_calls_total",
			Help: "Plugin calls by plugin entry, role (interceptor, driver), carrier (wasm, process) and outcome (ok, failed)."}, []string{"plugin", "role", "carrier", "outcome"}),
		pluginCallSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "antler_plugin_call_duration_seconds",
			Help: "Plugin call latency by plugin entry, role and carrier.", Buckets: latencyBuckets}, []string{"plugin", "role", "carrier"}),
		sessionsLive: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "antler_stdio_sessions",
			Help: "Live pooled stdio sessions by server."}, []string{"server"}),
		sessionEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "antler_stdio_session_events_total",
			Help: "Pooled stdio sessions started, evicted for room, closed idle, crashed and otherwise closed, by server."}, []string{"server", "event"}),
		oauthFetches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "antler_oauth_token_fetches_total",
			Help: "OAuth token endpoint requests by server and outcome (ok, failed)."}, []string{"server", "outcome"}),
		discoverySeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "antler_discovery_duration_seconds",
			Help: "Time to connect to a server and list its tools, by server.", Buckets: latencyBuckets}, []string{"server"}),
		discoveryFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "antler_discovery_failures_total",
			Help: "Discoveries that failed, by server."}, []string{"server"}),
		taskPollSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "antler_task_poll_duration_seconds",
			Help: "Durable task status polls by driver and outcome (ok, failed).", Buckets: latencyBuckets}, []string{"driver", "outcome"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "antler_task_notification_deliveries_total",
			Help: "Task event notification attempts by outcome (delivered, retried, dead_letter)."}, []string{"outcome"}),
		configReloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "antler_config_reloads_total",
			Help: "Tool set rebuilds after a configuration change or a cache reset, by outcome (applied; rejected: the new file does not load or its discovery failed, the last good tools still serve)."}, []string{"outcome"}),
		configRejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "antler_config_edits_rejected_total",
			Help: "Config admin API edits refused, by reason (invalid, launch_policy, conflict, not_found)."}, []string{"reason"}),
		catalogDrifts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "antler_tool_catalog_drifts_total",
			Help: "Discoveries whose tool list differed from the approved fingerprint, by server."}, []string{"server"}),
		tasks: newTaskCollector(),
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.toolCalls, m.toolCallSeconds, m.pluginCalls, m.pluginCallSeconds, m.sessionsLive, m.sessionEvents,
		m.oauthFetches, m.discoverySeconds, m.discoveryFailures, m.taskPollSeconds, m.deliveries,
		m.configReloads, m.configRejected, m.catalogDrifts, m.tasks,
	)
	return m
}

// Registry is the registry the series are on, for an embedder that serves
// them itself or adds its own.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// Handler serves the registry in the Prometheus text format (or
// OpenMetrics when the scraper asks for it). A collector that fails (the
// task store not answering) leaves its series out of that scrape; the rest
// are served.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.ContinueOnError})
}

// ToolCall records one tool call's outcome and latency.
func (m *Metrics) ToolCall(server, door, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.toolCalls.WithLabelValues(server, door, outcome).Inc()
	m.toolCallSeconds.WithLabelValues(server, door).Observe(d.Seconds())
}

// PluginCall records one interceptor or driver call of the plugin entry
// named plugin (its place in the configuration, e.g. mcpInterceptors[0]).
func (m *Metrics) PluginCall(plugin, role, carrier string, err error, d time.Duration) {
	if m == nil {
		return
	}
	m.pluginCalls.WithLabelValues(plugin, role, carrier, okOrFailed(err)).Inc()
	m.pluginCallSeconds.WithLabelValues(plugin, role, carrier).Observe(d.Seconds())
}

// Session records a stdio session event of server and moves the live gauge.
func (m *Metrics) Session(server, event string) {
	if m == nil {
		return
	}
	m.sessionEvents.WithLabelValues(server, event).Inc()
	switch event {
	case SessionStarted:
		m.sessionsLive.WithLabelValues(server).Inc()
	case SessionEvicted, SessionIdle, SessionCrashed, SessionClosed:
		m.sessionsLive.WithLabelValues(server).Dec()
	}
}

// OAuthFetch records one token endpoint request for server.
func (m *Metrics) OAuthFetch(server string, err error) {
	if m == nil {
		return
	}
	m.oauthFetches.WithLabelValues(server, okOrFailed(err)).Inc()
}

// Discovery records one server's discovery.
func (m *Metrics) Discovery(server string, err error, d time.Duration) {
	if m == nil {
		return
	}
	m.discoverySeconds.WithLabelValues(server).Observe(d.Seconds())
	if err != nil {
		m.discoveryFailures.WithLabelValues(server).Inc()
	}
}

// TaskPoll records one durable task status poll through driver.
func (m *Metrics) TaskPoll(driver string, err error, d time.Duration) {
	if m == nil {
		return
	}
	m.taskPollSeconds.WithLabelValues(driver, okOrFailed(err)).Observe(d.Seconds())
}

// Delivery records one notification attempt's outcome.
func (m *Metrics) Delivery(outcome string) {
	if m == nil {
		return
	}
	m.deliveries.WithLabelValues(outcome).Inc()
}

// ConfigReload records one rebuild after a configuration change.
func (m *Metrics) ConfigReload(outcome string) {
	if m == nil {
		return
	}
	m.configReloads.WithLabelValues(outcome).Inc()
}

// ConfigEditRejected records one refused config admin edit.
func (m *Metrics) ConfigEditRejected(reason string) {
	if m == nil {
		return
	}
	m.configRejected.WithLabelValues(reason).Inc()
}

// CatalogDrift records one discovery of server whose tools changed from
// what was approved.
func (m *Metrics) CatalogDrift(server string) {
	if m == nil {
		return
	}
	m.catalogDrifts.WithLabelValues(server).Inc()
}

// SetTaskStats installs the function the task gauges are read from at each
// scrape (the task store's counts); nil removes it. The function is given
// a bounded context and its failure leaves the gauges out of that scrape.
func (m *Metrics) SetTaskStats(stats func(context.Context) (TaskStats, error)) {
	if m == nil {
		return
	}
	m.tasks.set(stats)
}

func okOrFailed(err error) string {
	if err != nil {
		return "failed"
	}
	return "ok"
}
