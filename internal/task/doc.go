// Package task is the model of durable MCP tasks, without I/O: the six
// statuses, the snapshot a driver reports and the one boundary (Normalize)
// that checks and bounds it before storage, the requests and handles that
// pass between the service and a driver, the runtime's knobs and bounds,
// when to poll next and how to back off, and the registry of drivers.
//
// Long MCP work leaves the agent loop: an agent's submit returns a local id
// (LocalID) at once, and a background service polls the remote task through
// a Driver until it is terminal. A *ProtocolError from a driver or from
// Normalize fails the task for good; any other error is retried forever with
// PollBackoff. The rules and messages are DeerFlow's (its mcp/tasks
// package).
//
// Beyond DeerFlow, a task waiting for input can be answered: a driver that
// is also an Answerer gets the user's Answer, with an ID stable across
// redeliveries to pass on as the remote's idempotency key, and a State
// may carry DriverData for the store to keep with the state.
package task
