package gateway

// metricsPath is where Options.Metrics is served: to admin principals only,
// since the series name every server and plugin and show their traffic.
const metricsPath = "/metrics"
